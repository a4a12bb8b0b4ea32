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
// The model is small by construction: Dims buckets (feature hashing with a
// sign bit, so collisions cancel on average rather than add up) times the
// number of heads, each weight an int8 with one scale per head.
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
	dims  uint32 // a power of two
	bias  []float32
	scale []float32 // per head: weight = int8 * scale
	// w holds the weights bucket by bucket, a head after another:
	// w[b*len(heads)+h], so one token touches one cache line.
	w    []int8
	norm Norm
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

// Dims is the number of hash buckets.
func (m *Model) Dims() uint32 { return m.dims }

// The file's magic: MGTC2 models carry their normalization (a byte after
// the number of buckets); MGTC1, the first format, had none and summed.
// Parse reads both; Marshal writes MGTC2.
const (
	magic      = "MGTC2\n"
	magicSum   = "MGTC1\n"
	maxHeads   = 16
	maxDims    = 1 << 22
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
	if _, err := r.Read(head); err != nil || (string(head) != magic && string(head) != magicSum) {
		return nil, errors.New("textclass: not a model file (bad magic)")
	}
	var nHeads, dims uint32
	if err := binary.Read(r, binary.LittleEndian, &nHeads); err != nil {
		return nil, fmt.Errorf("textclass: header: %w", err)
	}
	if err := binary.Read(r, binary.LittleEndian, &dims); err != nil {
		return nil, fmt.Errorf("textclass: header: %w", err)
	}
	if nHeads == 0 || nHeads > maxHeads || dims == 0 || dims > maxDims || dims&(dims-1) != 0 {
		return nil, fmt.Errorf("textclass: %d heads of %d buckets: want 1..%d heads and a power of two up to %d buckets", nHeads, dims, maxHeads, maxDims)
	}
	norm := NormSum
	if string(head) == magic {
		if err := binary.Read(r, binary.LittleEndian, &norm); err != nil {
			return nil, fmt.Errorf("textclass: header: %w", err)
		}
		if norm < NormSum || norm > NormMean {
			return nil, fmt.Errorf("textclass: normalization %d: want %d..%d", norm, NormSum, NormMean)
		}
	}
	m := &Model{dims: dims, norm: norm, bias: make([]float32, nHeads), scale: make([]float32, nHeads)}
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
	n := int(dims) * int(nHeads)
	if r.Len() != n {
		return nil, fmt.Errorf("textclass: %d bytes of weights, want %d", r.Len(), n)
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
	b.WriteString(magic)
	binary.Write(&b, binary.LittleEndian, uint32(len(m.heads)))
	binary.Write(&b, binary.LittleEndian, m.dims)
	b.WriteByte(byte(m.norm))
	for _, h := range m.heads {
		b.WriteByte(byte(len(h)))
		b.WriteString(h)
	}
	binary.Write(&b, binary.LittleEndian, m.bias)
	binary.Write(&b, binary.LittleEndian, m.scale)
	binary.Write(&b, binary.LittleEndian, m.w)
	return b.Bytes()
}

// Score writes into out (len(Heads()) long) the probability each head
// gives the text: norm is the text in policy's normalized form (lowercase,
// a space around every word, Chinese characters without spaces), features
// the names of the lexicon features policy found in it. A head's logit is
// its bias plus the sum of the tokens' weights normalized by the number
// of tokens (the model's Norm).
func (m *Model) Score(norm string, features []string, out []float32) {
	h := len(m.heads)
	// Integer sums of the int8 weights: exact, and each head's scale
	// applied once.
	var acc [maxHeads]int64
	mask := m.dims - 1
	n := 0
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
	f := m.norm.factor(n)
	for i := range h {
		out[i] = sigmoid(float64(m.bias[i]) + float64(acc[i])*float64(m.scale[i])*f)
	}
}

func sigmoid(x float64) float32 {
	return float32(1 / (1 + math.Exp(-x)))
}

// String describes the model for logs.
func (m *Model) String() string {
	return fmt.Sprintf("textclass model: heads %s, %d buckets, %s of the weights", strings.Join(m.heads, ","), m.dims, m.norm)
}
