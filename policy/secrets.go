package policy

import (
	"sync"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/secrets"
)

// The default policy's secret and PII rules read input.secrets, which the
// governor fills from its SecretScanner (and PIIScanner). A Classifier is one too, so a governor built
// on the policy alone (tests, embedders) never stores a secret for want of
// a scanner; the sidecar passes its own.
var (
	_ memory.SecretScanner = (*Classifier)(nil)
	_ memory.PIIScanner    = (*Classifier)(nil)
	// The sidecar passes a *secrets.Scanner: it must find personal data too.
	_ memory.SecretScanner = (*secrets.Scanner)(nil)
	_ memory.PIIScanner    = (*secrets.Scanner)(nil)
)

var sharedScanner = sync.OnceValues(secrets.New)

// unavailableRule is reported for every text when the scanner cannot be
// built: the write is then rejected, not stored unscanned (fail closed).
const unavailableRule = "secret-scanner-unavailable"

// FindSecrets finds credentials in text with the secrets package's rules.
func (c *Classifier) FindSecrets(text string) []string {
	s, err := sharedScanner()
	if err != nil {
		return []string{unavailableRule}
	}
	return s.FindSecrets(text)
}

// FindPII finds personal data in text with the secrets package's
// detectors. When the scanner cannot be built FindSecrets already rejects
// every write, so this reports nothing.
func (c *Classifier) FindPII(text string) []string {
	s, err := sharedScanner()
	if err != nil {
		return nil
	}
	return s.FindPII(text)
}
