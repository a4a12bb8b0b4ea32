// Package textclass is memgate's learned text classifier: logistic
// regression over hashed word and character n-grams of a memory's
// normalized text and the lexicon features policy found in it, one
// output (head) per question policy asks ("is this high risk?", "is it
// an instruction to the agent?"…). It is trained from the labelled corpus
// by one command (cmd/memgate-train), ships as a file of the policy
// (classifier.model, beside data.json) and scores a write in a few
// microseconds, deterministically. Policy decides what the scores mean:
// the sidecar hands them to Rego as features.
//
// The model knows the features it was taught and no others: its
// vocabulary is every token (a 32-bit hash) found in at least MinCount
// training examples (default 2), each with an int8 weight per head and
// one scale per head. A token outside the vocabulary adds nothing: a text
// of words the model never saw scores as its bias and the features it
// does know say, instead of landing in hash buckets other features
// trained, which made an unread text score by chance (out of fold on the
// tuning rows, the risk head's false positives at 0.05 went from 12.2% to
// 8.2% for as many high-risk texts caught; policy/README.md). A feature
// seen once only teaches the model that one example.
//
// Models of the earlier formats (MGTC1, MGTC2: Dims hash buckets with a
// sign bit, every token landing in one) are still read and scored as
// they were trained.
//
// A head's logit is its bias plus the weights of the text's tokens, their
// sum normalized by the number n of tokens as the model was trained (Norm:
// not at all, divided by √n or by n; training and scoring normalize
// alike). The file format (MGTC2) carries the normalization; a file of the
// first format (MGTC1) has none and reads as a sum. Normalizing weighs
// long and short texts differently in training; at any one length it
// only rescales the weights, so it does not stop a text of words the
// model never saw (each lands in a bucket other features trained) from
// scoring high.
package textclass

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Model is a trained classifier. It is immutable once built or parsed and
// safe for concurrent use.
type Model struct {
	heads []string
	bias  []float32
	scale []float32 // per head: weight = int8 * scale
	// w holds the weights feature by feature (or bucket by bucket), a
	// head after another: w[i*len(heads)+h], so one token touches one
	// cache line.
	w    []int8
	norm Norm
	// vocab is the model's vocabulary (MGTC3): the tokens it knows, in
	// increasing order, token vocab[i] weighing w[i*len(heads):]; index
	// finds them.
	vocab []uint32
	index table
	// dims is the number of hash buckets of a model of the earlier
	// formats (MGTC1, MGTC2), which have no vocabulary: 0 otherwise.
	dims uint32
}

// Norm is how a model normalizes the sum of a text's token weights by the
// number n of its tokens before adding the bias.
type Norm uint8

const (
	// NormSum adds the weights as they are (the MGTC1 format's models).
	NormSum Norm = iota + 1
	// NormSqrt divides the sum by √n.
	NormSqrt
	// NormMean divides the sum by n: the mean weight of the tokens.
	NormMean
)

// String names the normalization as cmd/memgate-train's -norm flag does.
func (n Norm) String() string {
	switch n {
	case NormSum:
		return "sum"
	case NormSqrt:
		return "sqrt"
	case NormMean:
		return "mean"
	}
	return fmt.Sprintf("Norm(%d)", uint8(n))
}

// ParseNorm reads a Norm's name (sum, sqrt, mean).
func ParseNorm(s string) (Norm, error) {
	for n := NormSum; n <= NormMean; n++ {
		if n.String() == s {
			return n, nil
		}
	}
	return 0, fmt.Errorf("textclass: normalization %q: want sum, sqrt or mean", s)
}

// factor is what the sum of n tokens' weights is multiplied by.
func (n Norm) factor(tokens int) float64 {
	if tokens <= 1 {
		return 1
	}
	switch n {
	case NormSqrt:
		return 1 / math.Sqrt(float64(tokens))
	case NormMean:
		return 1 / float64(tokens)
	}
	return 1
}

// Norm is how the model normalizes a text's sum of weights.
func (m *Model) Norm() Norm { return m.norm }

// Heads names the model's outputs, in the order Score writes them.
func (m *Model) Heads() []string { return m.heads }

// Vocabulary is the number of features the model knows (0 for a model
// of the earlier formats, which hash every token into a bucket).
func (m *Model) Vocabulary() int { return len(m.vocab) }

// The file's magic: MGTC3 models carry a vocabulary; MGTC2 ones hash
// tokens into buckets and carry their normalization (a byte after the
// number of buckets); MGTC1, the first format, had none and summed.
// Parse reads all three; Marshal writes MGTC3.
const (
	magic      = "MGTC3\n"
	magicDense = "MGTC2\n"
	magicSum   = "MGTC1\n"
	maxHeads   = 16
	maxDims    = 1 << 22 // buckets of a model of the earlier formats
	maxVocab   = 1 << 22
	maxNameLen = 64
)

// armor is the first line of a model file: the file is text (the model in
// base64 after it), so that it travels wherever a policy's files do: JSON
// request bodies, ConfigMaps, bundles.
const armor = "# memgate text classifier (package textclass): base64 of the model, made by cmd/memgate-train\n"

// Parse reads a model written by Marshal.
func Parse(text []byte) (*Model, error) {
	body, ok := bytes.CutPrefix(text, []byte(armor))
	if !ok {
		return nil, errors.New("textclass: not a model file (its first line is not the textclass header)")
	}
	b, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(body), nil)))
	if err != nil {
		return nil, fmt.Errorf("textclass: model file: %w", err)
	}
	return parseBinary(b)
}

func parseBinary(b []byte) (*Model, error) {
	r := bytes.NewReader(b)
	head := make([]byte, len(magic))
	if _, err := r.Read(head); err != nil || (string(head) != magic && string(head) != magicDense && string(head) != magicSum) {
		return nil, errors.New("textclass: not a model file (bad magic)")
	}
	vocabulary := string(head) == magic
	// size is the number of features (MGTC3) or of buckets.
	var nHeads, size uint32
	if err := binary.Read(r, binary.LittleEndian, &nHeads); err != nil {
		return nil, fmt.Errorf("textclass: header: %w", err)
	}
	if err := binary.Read(r, binary.LittleEndian, &size); err != nil {
		return nil, fmt.Errorf("textclass: header: %w", err)
	}
	if nHeads == 0 || nHeads > maxHeads {
		return nil, fmt.Errorf("textclass: %d heads: want 1..%d", nHeads, maxHeads)
	}
	switch {
	case vocabulary && size > maxVocab:
		return nil, fmt.Errorf("textclass: %d features: want at most %d", size, maxVocab)
	case !vocabulary && (size == 0 || size > maxDims || size&(size-1) != 0):
		return nil, fmt.Errorf("textclass: %d buckets: want a power of two up to %d", size, maxDims)
	}
	norm := NormSum
	if string(head) != magicSum {
		if err := binary.Read(r, binary.LittleEndian, &norm); err != nil {
			return nil, fmt.Errorf("textclass: header: %w", err)
		}
		if norm < NormSum || norm > NormMean {
			return nil, fmt.Errorf("textclass: normalization %d: want %d..%d", norm, NormSum, NormMean)
		}
	}
	m := &Model{norm: norm, bias: make([]float32, nHeads), scale: make([]float32, nHeads)}
	for i := range nHeads {
		var n uint8
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil || n == 0 || n > maxNameLen {
			return nil, fmt.Errorf("textclass: head %d: bad name", i)
		}
		name := make([]byte, n)
		if _, err := r.Read(name); err != nil {
			return nil, fmt.Errorf("textclass: head %d: %w", i, err)
		}
		m.heads = append(m.heads, string(name))
	}
	for _, f := range [][]float32{m.bias, m.scale} {
		if err := binary.Read(r, binary.LittleEndian, f); err != nil {
			return nil, fmt.Errorf("textclass: biases and scales: %w", err)
		}
		for _, x := range f {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, errors.New("textclass: a bias or scale is not a finite number")
			}
		}
	}
	n := int(size) * int(nHeads)
	want := n
	if vocabulary {
		want += 4 * int(size)
	}
	if r.Len() != want {
		return nil, fmt.Errorf("textclass: %d bytes of features and weights, want %d", r.Len(), want)
	}
	if vocabulary {
		m.vocab = make([]uint32, size)
		if err := binary.Read(r, binary.LittleEndian, m.vocab); err != nil {
			return nil, fmt.Errorf("textclass: vocabulary: %w", err)
		}
		for i := 1; i < len(m.vocab); i++ {
			if m.vocab[i] <= m.vocab[i-1] {
				return nil, errors.New("textclass: the vocabulary is not in strictly increasing order")
			}
		}
		m.index = newTable(m.vocab)
	} else {
		m.dims = size
	}
	m.w = make([]int8, n)
	if err := binary.Read(r, binary.LittleEndian, m.w); err != nil {
		return nil, fmt.Errorf("textclass: weights: %w", err)
	}
	return m, nil
}

// Marshal writes the model in the format Parse reads: the header line,
// then the binary model in base64, 76 characters a line.
func (m *Model) Marshal() []byte {
	enc := base64.StdEncoding.EncodeToString(m.marshalBinary())
	var out bytes.Buffer
	out.WriteString(armor)
	for len(enc) > 76 {
		out.WriteString(enc[:76])
		out.WriteByte('\n')
		enc = enc[76:]
	}
	out.WriteString(enc)
	out.WriteByte('\n')
	return out.Bytes()
}

func (m *Model) marshalBinary() []byte {
	var b bytes.Buffer
	size := m.dims
	if m.dims == 0 {
		b.WriteString(magic)
		size = uint32(len(m.vocab))
	} else {
		b.WriteString(magicDense)
	}
	binary.Write(&b, binary.LittleEndian, uint32(len(m.heads)))
	binary.Write(&b, binary.LittleEndian, size)
	b.WriteByte(byte(m.norm))
	for _, h := range m.heads {
		b.WriteByte(byte(len(h)))
		b.WriteString(h)
	}
	binary.Write(&b, binary.LittleEndian, m.bias)
	binary.Write(&b, binary.LittleEndian, m.scale)
	if m.dims == 0 {
		binary.Write(&b, binary.LittleEndian, m.vocab)
	}
	binary.Write(&b, binary.LittleEndian, m.w)
	return b.Bytes()
}

// Score writes into out (len(Heads()) long) the probability each head
// gives the text: norm is the text in policy's normalized form (lowercase,
// a space around every word, Chinese characters without spaces), features
// the names of the lexicon features policy found in it. A head's logit is
// its bias plus the sum of the tokens' weights normalized by the number
// of tokens (the model's Norm). Tokens outside the model's vocabulary
// are not counted.
func (m *Model) Score(norm string, features []string, out []float32) {
	h := len(m.heads)
	// Integer sums of the int8 weights: exact, and each head's scale
	// applied once.
	var acc [maxHeads]int64
	n := 0
	if m.dims == 0 {
		Tokens(norm, features, func(t uint32) {
			i := m.index.find(t)
			if i < 0 {
				return
			}
			n++
			b := i * h
			for j := range h {
				acc[j] += int64(m.w[b+j])
			}
		})
		m.finish(acc[:h], n, out)
		return
	}
	mask := m.dims - 1
	Tokens(norm, features, func(t uint32) {
		n++
		b := int(t&mask) * h
		if t&signBit != 0 {
			for i := range h {
				acc[i] -= int64(m.w[b+i])
			}
		} else {
			for i := range h {
				acc[i] += int64(m.w[b+i])
			}
		}
	})
	m.finish(acc[:h], n, out)
}

// finish turns each head's sum of int8 weights over n tokens into its
// probability.
func (m *Model) finish(acc []int64, n int, out []float32) {
	f := m.norm.factor(n)
	for i := range acc {
		out[i] = sigmoid(float64(m.bias[i]) + float64(acc[i])*float64(m.scale[i])*f)
	}
}

func sigmoid(x float64) float32 {
	return float32(1 / (1 + math.Exp(-x)))
}

// String describes the model for logs.
func (m *Model) String() string {
	if m.dims != 0 {
		return fmt.Sprintf("textclass model: heads %s, %d buckets, %s of the weights", strings.Join(m.heads, ","), m.dims, m.norm)
	}
	return fmt.Sprintf("textclass model: heads %s, %d features, %s of the weights", strings.Join(m.heads, ","), len(m.vocab), m.norm)
}

// table finds a token's place in the vocabulary: open addressing over
// the token's low bits (tokens are mixed hashes already), with linear
// probing, at most half full. It is built from the vocabulary when the
// model is, and read-only after.
type table struct {
	slots []slot
	mask  uint32
}

// slot is a token and its index in the vocabulary (at < 0: empty), side
// by side so that a probe reads one cache line.
type slot struct {
	key uint32
	at  int32
}

func newTable(vocab []uint32) table {
	size := uint32(16)
	for size < 2*uint32(len(vocab)) {
		size <<= 1
	}
	t := table{slots: make([]slot, size), mask: size - 1}
	for i := range t.slots {
		t.slots[i].at = -1
	}
	for i, k := range vocab {
		s := k & t.mask
		for t.slots[s].at >= 0 {
			s = (s + 1) & t.mask
		}
		t.slots[s] = slot{key: k, at: int32(i)}
	}
	return t
}

// find returns the token's index in the vocabulary, or -1.
func (t *table) find(k uint32) int {
	for s := k & t.mask; ; s = (s + 1) & t.mask {
		switch e := t.slots[s]; {
		case e.at < 0:
			return -1
		case e.key == k:
			return int(e.at)
		}
	}
}
