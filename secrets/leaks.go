package secrets

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
	"github.com/zricethezav/gitleaks/v8/report"
)

// leakRules is gitleaks' default configuration, compiled once per process:
// compiling its ~220 regular expressions takes about 100 ms, and the result
// is read-only, so every Scanner shares it.
var leakRules = sync.OnceValues(loadLeakRules)

// compiledLeaks is gitleaks' compiled default configuration and the
// prefilter derived from it.
type compiledLeaks struct {
	cfg      config.Config
	gate     *leakGate
	detector *detect.Detector // all rules
	// single[i] runs only gate.rules[i], whatever the keywords; nil
	// where the gate cannot tell (gateRule.always).
	single []*detect.Detector
}

func loadLeakRules() (*compiledLeaks, error) {
	silenceGitleaks()
	// A viper instance of our own, not NewDetectorDefaultConfig: that one
	// loads the config through viper's process-wide instance, which is not
	// safe for concurrent use and which other code could also be using.
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return nil, fmt.Errorf("secrets: read gitleaks default config: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("secrets: decode gitleaks default config: %w", err)
	}
	countExampleKeys(&vc)
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("secrets: compile gitleaks default config: %w", err)
	}
	gate, err := newLeakGate(cfg)
	if err != nil {
		return nil, err
	}
	c := &compiledLeaks{cfg: cfg, gate: gate, detector: newDetector(cfg)}
	for _, gr := range gate.rules {
		var d *detect.Detector
		if !gr.always {
			d = newDetector(singleRule(cfg, gr.id))
		}
		c.single = append(c.single, d)
	}
	return c, nil
}

// singleRule returns a configuration with only rule id (and the rules it
// requires), without keywords: the gate checks them, exactly as the
// detector would (see ids), and a rule without keywords always runs.
func singleRule(cfg config.Config, id string) config.Config {
	r := cfg.Rules[id]
	r.Keywords = nil
	one := config.Config{
		Rules:        map[string]config.Rule{id: r},
		Keywords:     map[string]struct{}{},
		OrderedRules: []string{id},
		Allowlists:   cfg.Allowlists,
	}
	for _, req := range r.RequiredRules {
		if _, ok := one.Rules[req.RuleID]; !ok {
			one.Rules[req.RuleID] = cfg.Rules[req.RuleID]
		}
	}
	return one
}

// silenceGitleaks turns gitleaks' logging off. gitleaks logs through its
// exported package variable logging.Logger (a zerolog logger writing to
// stderr at info level); its own CLI sets the level by assigning that
// variable, and there is no other knob. We assign a no-op logger once,
// before any detector of ours exists, rather than zerolog.SetGlobalLevel,
// which would also silence every other zerolog user in the process.
func silenceGitleaks() {
	logging.Logger = zerolog.Nop()
}

// newDetector returns a gitleaks detector for cfg. They are shared by every
// Scanner (the full one's keyword trie alone takes 2.7 MB): Detect is safe for
// concurrent use, as it reads the rules and the trie and only adds to an
// atomic byte counter. Its other state (findings, commits, baseline) is
// used only when scanning git history or files.
func newDetector(cfg config.Config) *detect.Detector {
	d := detect.NewDetector(cfg)
	// Decoding is ours (decode.go), with the same rules for every form.
	d.MaxDecodeDepth = 0
	return d
}

// ids appends the ids of the gitleaks rules that match text: the same
// ids as the full detector's, found by running only the rules the gate
// cannot rule out.
func (c *compiledLeaks) ids(text string, ids []string) []string {
	lower, aligned := foldLower(text)
	var buf [8]int
	cands, all := c.gate.candidates(text, lower, aligned, buf[:0])
	if !all && len(cands) == 0 {
		return ids
	}
	// The detector checks keywords in strings.ToLower(text), which
	// differs from foldLower(text) only for the long s and invalid
	// UTF-8: for those, and for rules the gate cannot narrow, it decides.
	if all || strings.ContainsRune(text, 'ſ') || !utf8.ValidString(text) {
		return appendRuleIDs(ids, c.detector.DetectString(text))
	}
	start, generic := len(ids), false
	for _, i := range cands {
		for _, f := range c.single[i].DetectString(text) {
			ids = append(ids, f.RuleID)
			generic = generic || isGeneric(f.RuleID)
		}
	}
	// The detector drops a generic rule's finding when another rule
	// found the same secret on its line: only it can tell.
	if generic && slices.ContainsFunc(ids[start:], func(id string) bool { return !isGeneric(id) }) {
		return appendRuleIDs(ids[:start], c.detector.DetectString(text))
	}
	return ids
}

// isGeneric is gitleaks' own test for the rules it ranks below others.
func isGeneric(id string) bool {
	return strings.Contains(strings.ToLower(id), "generic")
}

func appendRuleIDs(ids []string, findings []report.Finding) []string {
	for _, f := range findings {
		ids = append(ids, f.RuleID)
	}
	return ids
}
