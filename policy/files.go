package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// FileSet is a policy as files: slash-separated relative path -> content.
// *.rego files are modules (*_test.rego ones are Rego unit tests, run on
// every load and never evaluated for decisions); *.json, *.yaml and *.yml
// files are data, placed at their directory's path as OPA's loader does (so
// a top-level data.json is the root of data); a top-level classifier.model
// is the learned text classifier whose scores the sidecar hands to the
// rules (ModelFile).
type FileSet map[string]string

// Bounds on a policy, whether read from disk, a bundle or a request body.
const (
	MaxPolicyFiles      = 256
	MaxPolicyFileBytes  = 1 << 20
	MaxPolicyTotalBytes = 8 << 20
)

// policyFile reports whether a file name belongs to a policy.
func policyFile(name string) bool {
	switch path.Ext(name) {
	case ".rego", ".json", ".yaml", ".yml":
		return true
	}
	return isModel(name)
}

// ModelFile is the learned text classifier of a policy (package textclass),
// beside its data: it is read by the sidecar, never handed to OPA.
const ModelFile = "classifier.model"

func isModel(name string) bool { return name == ModelFile }

func isTestModule(name string) bool { return strings.HasSuffix(name, "_test.rego") }

func isModule(name string) bool { return path.Ext(name) == ".rego" }

// ReadDir reads a policy directory into a FileSet. It descends into
// subdirectories, skips names starting with "." (a Kubernetes ConfigMap
// mount keeps its real files under "..data") and files of other types, and
// refuses a directory over the size bounds. Symlinks to files are followed;
// symlinks to directories are not.
func ReadDir(dir string) (FileSet, error) {
	root, err := filepath.EvalSymlinks(dir) // the directory itself may be a link
	if err != nil {
		return nil, fmt.Errorf("read policy directory %s: %w", dir, err)
	}
	files := FileSet{}
	total := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !policyFile(d.Name()) {
			return nil
		}
		info, err := os.Stat(p) // follows a symlink
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if len(files) >= MaxPolicyFiles {
			return fmt.Errorf("more than %d policy files", MaxPolicyFiles)
		}
		content, err := readBounded(p)
		if err != nil {
			return err
		}
		if total += len(content); total > MaxPolicyTotalBytes {
			return fmt.Errorf("policy files are more than %d bytes in all", MaxPolicyTotalBytes)
		}
		files[filepath.ToSlash(rel)] = content
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read policy directory %s: %w", dir, err)
	}
	return files, nil
}

func readBounded(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxPolicyFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	if len(b) > MaxPolicyFileBytes {
		return "", fmt.Errorf("%s is more than %d bytes", p, MaxPolicyFileBytes)
	}
	return string(b), nil
}

// Validate checks a FileSet that did not come from ReadDir (e.g. a request
// body): relative clean paths of policy files, within the size bounds, with
// at least one module.
func (files FileSet) Validate() error {
	if len(files) > MaxPolicyFiles {
		return fmt.Errorf("policy has %d files, more than the %d allowed", len(files), MaxPolicyFiles)
	}
	total, modules := 0, 0
	for p, content := range files {
		if !fs.ValidPath(p) || p == "." {
			return fmt.Errorf("policy file path %q is not a clean relative path", p)
		}
		if !policyFile(p) {
			return fmt.Errorf("policy file %q is not .rego, .json, .yaml or .yml, nor %s", p, ModelFile)
		}
		if len(content) > MaxPolicyFileBytes {
			return fmt.Errorf("policy file %q is %d bytes, more than the %d allowed", p, len(content), MaxPolicyFileBytes)
		}
		total += len(content)
		if isModule(p) && !isTestModule(p) {
			modules++
		}
	}
	if total > MaxPolicyTotalBytes {
		return fmt.Errorf("policy files are %d bytes in all, more than the %d allowed", total, MaxPolicyTotalBytes)
	}
	if modules == 0 {
		return fmt.Errorf("policy has no Rego module")
	}
	return nil
}

// Revision is the content hash of the files (paths and contents), which
// names the policy in every decision it makes.
func (files FileSet) Revision() string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		// Length-prefixed, so no two different sets hash the same stream.
		fmt.Fprintf(h, "%d:%s%d:", len(p), p, len(files[p]))
		io.WriteString(h, files[p])
	}
	return hex.EncodeToString(h.Sum(nil))
}
