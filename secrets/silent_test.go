package secrets

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// TestNothingOnStderr runs New and FindSecrets in a child process and
// checks that gitleaks (which logs to stderr by default) printed nothing.
func TestNothingOnStderr(t *testing.T) {
	if os.Getenv("SECRETS_STDERR_CHILD") == "1" {
		s, err := New()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range secretCases {
			s.FindSecrets(c.text)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNothingOnStderr$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SECRETS_STDERR_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("wrote to stderr:\n%s", stderr.String())
	}
}
