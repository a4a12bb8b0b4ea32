package policy

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed default/*.rego default/*.json default/classifier.model
var defaultFS embed.FS

// DefaultFiles returns the policy built into the binary: its modules, its
// Rego tests, its data document (default/data.json) and its text
// classifier (default/classifier.model, made by cmd/memgate-train), which
// an operator's policy directory or bundle replaces as a whole.
func DefaultFiles() FileSet {
	files := FileSet{}
	err := fs.WalkDir(defaultFS, "default", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := defaultFS.ReadFile(p)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(p, "default/")] = string(b)
		return nil
	})
	if err != nil {
		panic("policy: embedded default policy unreadable: " + err.Error()) // a build defect
	}
	return files
}

//go:embed default/examples.jsonl
var defaultExamples []byte

// DefaultExamples returns the table of example writes shipped beside the
// default policy (default/examples.jsonl, in ReadExamples' format): what
// `sidecar policy test` checks the built-in policy against. It is not
// part of the policy's files; an operator who copies the default keeps it
// as examples.jsonl in the copy.
func DefaultExamples() []byte { return defaultExamples }
