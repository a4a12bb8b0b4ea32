// Package embedtest offers what tests of semantic search need: a fake
// OpenAI-compatible embeddings endpoint on loopback whose vectors are
// deterministic and meaningful enough to rank by, and an in-memory
// embed.Store.
//
// The fake embeds a text as a bag of its stemmed words, each word hashed
// into one dimension, plus a small concept table: words of one concept
// (editor, theme, dark mode, colour scheme… are "appearance") also add to
// the concept's own dimension, so related texts share dimensions without
// sharing words. "what editor theme does alice like?" and "I prefer dark
// mode in every editor" have a cosine well above 0.1.
//
// The server can fail, stall and count calls, to test retries, backoff,
// queue bounds and the fallback to lexical search.
package embedtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// DefaultDim is the fake's dimension unless Options say otherwise.
const DefaultDim = 256

// Options configure a Server.
type Options struct {
	Dim    int    // default DefaultDim
	Model  string // the only model served; default: any model is served
	APIKey string // when set, requests must carry it as a bearer token
}

// Server is a fake embeddings endpoint. Its methods are safe for concurrent
// use.
type Server struct {
	URL string // the base URL (http://127.0.0.1:port/v1)

	srv   *httptest.Server
	model string
	key   string

	mu       sync.Mutex
	dim      int
	calls    int
	inputs   int
	batches  []int
	embedded map[string]int // texts embedded in successful answers, and how often
	failures []failure
	stall    chan struct{} // requests wait on it while not nil
	pad      int
}

type failure struct {
	status  int
	message string
}

// NewServer starts a fake endpoint on loopback, closed when the test ends.
func NewServer(tb testing.TB, o Options) *Server {
	tb.Helper()
	if o.Dim <= 0 {
		o.Dim = DefaultDim
	}
	s := &Server{model: o.Model, key: o.APIKey, dim: o.Dim}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	tb.Cleanup(func() {
		s.Release()
		s.srv.Close()
	})
	return s
}

// FailNext makes the next n requests answer status with message, in the
// OpenAI error shape.
func (s *Server) FailNext(n, status int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, failure{status: status, message: message})
	}
}

// Stall makes requests wait, unanswered, until Release or until the client
// gives up.
func (s *Server) Stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stall == nil {
		s.stall = make(chan struct{})
	}
}

// Release answers the stalled requests and stops stalling.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stall != nil {
		close(s.stall)
		s.stall = nil
	}
}

// SetDim changes the dimension of the next answers (a model switched
// behind the same name).
func (s *Server) SetDim(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dim = d
}

// Pad adds n bytes of white space to each answer (an oversize answer).
func (s *Server) Pad(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pad = n
}

// Calls returns how many requests arrived, failed and stalled ones included.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Inputs returns how many texts were embedded in successful answers.
func (s *Server) Inputs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inputs
}

// Embedded returns how many times text was embedded in successful answers:
// more than once means a client asked again for what it (or another
// client sharing its vectors) had.
func (s *Server) Embedded(text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.embedded[text]
}

// Batches returns the number of texts of each request, in arrival order.
func (s *Server) Batches() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.batches...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		writeError(w, http.StatusNotFound, "not found: "+r.Method+" "+r.URL.Path)
		return
	}
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	var texts []string
	err := json.NewDecoder(r.Body).Decode(&req)
	if err == nil {
		if err = json.Unmarshal(req.Input, &texts); err != nil {
			var one string
			if err = json.Unmarshal(req.Input, &one); err == nil {
				texts = []string{one}
			}
		}
	}
	s.mu.Lock()
	s.calls++
	s.batches = append(s.batches, len(texts))
	var fail *failure
	if len(s.failures) > 0 {
		fail = &s.failures[0]
		s.failures = s.failures[1:]
	}
	stall, dim, pad := s.stall, s.dim, s.pad
	s.mu.Unlock()

	if stall != nil {
		select {
		case <-stall:
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case fail != nil:
		writeError(w, fail.status, fail.message)
		return
	case s.key != "" && r.Header.Get("Authorization") != "Bearer "+s.key:
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided")
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "bad request: "+err.Error())
		return
	case s.model != "" && req.Model != s.model:
		writeError(w, http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", req.Model))
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: req.Model}
	for i := len(texts) - 1; i >= 0; i-- { // reversed: clients must place by index
		out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: Vector(texts[i], dim)})
	}
	s.mu.Lock()
	s.inputs += len(texts)
	if s.embedded == nil {
		s.embedded = map[string]int{}
	}
	for _, t := range texts {
		s.embedded[t]++
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
	if pad > 0 {
		_, _ = w.Write([]byte(strings.Repeat(" ", pad)))
	}
}

func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error"}})
}

// concepts maps a stemmed word to the concept it belongs to. Each concept
// has a dimension of its own, weighted so that two texts on one concept
// share more than a word.
var concepts = map[string]string{
	// appearance of a tool
	"editor": "appearance", "ide": "appearance", "theme": "appearance", "dark": "appearance", "light": "appearance",
	"mode": "appearance", "colour": "appearance", "color": "appearance", "scheme": "appearance", "font": "appearance",
	"vim": "appearance", "neovim": "appearance", "vscode": "appearance",
	// liking
	"like": "preference", "prefer": "preference", "love": "preference", "favourite": "preference",
	"favorite": "preference", "enjoy": "preference", "want": "preference", "hate": "preference", "dislike": "preference",
	// publishing
	"publish": "publishing", "release": "publishing", "deploy": "publishing", "ship": "publishing", "launch": "publishing",
	"auto": "publishing", "blog": "publishing", "post": "publishing",
	// food
	"food": "food", "eat": "food", "vegetarian": "food", "vegan": "food", "meat": "food", "lunch": "food",
	"dinner": "food", "pizza": "food", "sushi": "food", "allergic": "food", "allergy": "food",
	// travel
	"travel": "travel", "trip": "travel", "flight": "travel", "fly": "travel", "hotel": "travel", "visit": "travel",
	// language
	"language": "language", "speak": "language", "english": "language", "chinese": "language", "french": "language",
	"german": "language", "spanish": "language",
}

// stemmedConcepts is concepts keyed by stem, as Words returns them.
var stemmedConcepts = func() map[string]string {
	m := make(map[string]string, len(concepts))
	for w, c := range concepts {
		m[stem(w)] = c
	}
	return m
}()

// conceptNames fixes each concept's dimension: the first dimensions of the
// vector, in this order; words hash into the rest.
var conceptNames = []string{"appearance", "preference", "publishing", "food", "travel", "language"}

const conceptWeight = 1.5

var stopwords = map[string]bool{
	"a": true, "an": true, "the": true, "i": true, "me": true, "my": true, "we": true, "our": true, "you": true,
	"is": true, "are": true, "was": true, "be": true, "do": true, "does": true, "did": true, "what": true,
	"which": true, "who": true, "how": true, "in": true, "on": true, "at": true, "of": true, "to": true,
	"for": true, "and": true, "or": true, "it": true, "that": true, "this": true, "with": true, "every": true,
	"all": true, "any": true, "some": true, "he": true, "she": true, "they": true, "his": true, "her": true,
}

// Words returns the stemmed words of text the fake embeds, stopwords left
// out.
func Words(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if stopwords[w] {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// stem folds the commonest English endings; enough for a fake.
func stem(w string) string {
	for _, suf := range []string{"ing", "ies", "es", "ed", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			w = strings.TrimSuffix(w, suf)
			if suf == "ies" {
				w += "y"
			}
			break
		}
	}
	if len(w) > 3 && w[len(w)-1] == 'e' {
		w = w[:len(w)-1]
	}
	return w
}

// Vector is the fake's embedding of text in dim dimensions (at least one
// more than the concepts), not normalised: what the server answers.
func Vector(text string, dim int) []float32 {
	v := make([]float32, dim)
	nc := len(conceptNames)
	if dim <= nc {
		return v
	}
	index := map[string]int{}
	for i, c := range conceptNames {
		index[c] = i
	}
	for _, w := range Words(text) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[nc+int(h.Sum32()%uint32(dim-nc))]++
		if c, ok := stemmedConcepts[w]; ok {
			v[index[c]] += conceptWeight
		}
	}
	return v
}

// Cosine is the cosine similarity of the fake's embeddings of a and b, as
// the embed package should compute it.
func Cosine(a, b string, dim int) float64 {
	va, vb := Vector(a, dim), Vector(b, dim)
	var d, na, nb float64
	for i := range va {
		d += float64(va[i]) * float64(vb[i])
		na += float64(va[i]) * float64(va[i])
		nb += float64(vb[i]) * float64(vb[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return d / math.Sqrt(na*nb)
}
