package deploy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memgate/memgate/policy"
)

// The default-policy component (the example and fleet overlays use it)
// ships the built-in default policy as its ConfigMap
// (kustomize cannot read files outside the overlay); keep the copy exact so
// the example deploys what the binary would do without it.
func TestExamplePolicyIsTheDefaultPolicy(t *testing.T) {
	dir := filepath.Join("kubernetes", "components", "default-policy", "policy")
	want := policy.DefaultFiles()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("%s has %d files, the default policy %d", dir, len(entries), len(want))
	}
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%v (refresh with: cp policy/default/*.rego policy/default/*.json policy/default/classifier.model %s/)", err, dir)
			continue
		}
		if string(got) != content {
			t.Errorf("%s/%s differs from policy/default/%s (refresh with: cp policy/default/*.rego policy/default/*.json policy/default/classifier.model %s/)", dir, name, name, dir)
		}
	}
}
