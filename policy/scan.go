package policy

import (
	"sync"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/ast"
)

// textScan is what the sidecar found in one candidate's texts: its
// normalized summary, which features occur and the captures. It is
// immutable once built, so the queries of one write share it.
type textScan struct {
	norm string
	// texts are the candidate's texts the features were found in, and
	// scanNorm the normalized text keyword lists were matched against.
	texts    *candidateText
	scanNorm string
	// found is indexed by feature id (textFeatures.names).
	found    []bool
	captures map[string]*ast.Term // capture name -> what it captured
	// scores are the classifier's (nil without one).
	scores []float32
}

// scanText finds f's features and captures in rec's texts, folding its
// summary once for the normalized text and the clauses.
func (f *textFeatures) scanText(rec *memory.Record) *textScan {
	return f.scan(rec, readCandidate(rec, f.contextSources))
}

// scan finds f's features and captures in rec, whose texts are ct.
// Keyword lists, leads and patterns are matched against every text;
// captures against the summary (they name where a free-text memory goes).
func (f *textFeatures) scan(rec *memory.Record, ct *candidateText) *textScan {
	norm := ct.norm
	s := &textScan{norm: norm, texts: ct, scanNorm: ct.scanNorm(), found: make([]bool, len(f.names))}
	found := s.found
	f.matchWords(s.scanNorm, ct.clauseHeads(), found)
	for name, id := range f.builtin {
		found[id] = ct.builtin[name]
	}
	if f.model != nil {
		s.scores = f.scoreTexts(ct)
	}
	if len(f.patterns) > 0 {
		f.matchPatterns(rec, ct.more, found)
	}
	for _, cs := range f.captures {
		if c, ok := cs.capture(norm); ok {
			if s.captures == nil {
				s.captures = map[string]*ast.Term{}
			}
			s.captures[string(cs.name.Value.(ast.String))] = ast.StringTerm(c)
		}
	}
	return s
}

// matchWords sets found for the keyword lists matched in norm (except
// lists with their phrases blanked out) and the lead lists that open one
// of heads' clauses (clauseHeads form).
func (f *textFeatures) matchWords(norm, heads string, found []bool) {
	f.index.match(norm, found) // keyword list i is feature i
	for _, e := range f.excepts {
		var hit [1]bool
		e.index.match(e.mask.Replace(norm), hit[:])
		found[e.id] = hit[0]
	}
	if len(f.leads) > 0 {
		var lbuf [16]bool
		lfound := lbuf[:0]
		if n := len(f.leads); n <= len(lbuf) {
			lfound = lbuf[:n]
		} else {
			lfound = make([]bool, n)
		}
		f.leadIndex.match(heads, lfound)
		for i, hit := range lfound {
			if hit {
				found[f.leadIDs[i]] = true
			}
		}
	}
}

// scanMemoSize bounds the texts a policy revision remembers: enough for
// the writes in flight between a write's placement and its decision.
const scanMemoSize = 64

// scanMemo shares the text scan of a candidate between the queries of one
// write: the governor places free text, then decides the placed write,
// and both queries read the same text facts (issue 15: the scan was half
// of a placement's cost). A scan is found again only for the same
// texts (summary, evidence and its source, value and metadata: what
// features are matched against), so a placement that filled in a value is
// scanned afresh. It remembers the last scanMemoSize texts, oldest out first.
type scanMemo struct {
	// spec is the policy's features: a scan by other features (a test's
	// hand-built spec) is not remembered.
	spec *textFeatures

	mu     sync.Mutex
	recent map[scanKey]*textScan
	order  [scanMemoSize]scanKey
	next   int
}

type scanKey struct{ summary, excerpt, sourceRef, value, metadata string }

// newScanMemo returns a memo for a policy's features; nil when it has
// none.
func newScanMemo(spec *textFeatures) *scanMemo {
	if spec == nil {
		return nil
	}
	return &scanMemo{spec: spec, recent: make(map[scanKey]*textScan, scanMemoSize)}
}

// get returns the scan of rec's text by the features want.
func (m *scanMemo) get(rec *memory.Record, want *textFeatures) *textScan {
	if m == nil || want != m.spec {
		return want.scanText(rec)
	}
	k := scanKey{rec.Summary, rec.Evidence.Excerpt, rec.Evidence.SourceRef, string(rec.Value), mapWords(rec.Metadata)}
	m.mu.Lock()
	s := m.recent[k]
	m.mu.Unlock()
	if s != nil {
		return s
	}
	s = m.spec.scanText(rec)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.recent[k]; !ok {
		delete(m.recent, m.order[m.next])
		m.order[m.next] = k
		m.next = (m.next + 1) % scanMemoSize
		m.recent[k] = s
	}
	return s
}

// forget drops every remembered scan: benchmarks measure a write's first
// scan with it.
func (m *scanMemo) forget() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.recent)
	m.order = [scanMemoSize]scanKey{}
	m.next = 0
}
