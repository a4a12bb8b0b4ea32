package textclass

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// Example is one labelled text for Train.
type Example struct {
	Norm     string    // the text in policy's normalized form
	Features []string  // the lexicon features policy found in it
	Labels   []float32 // per head: 1 (yes), 0 (no) or -1 (not labelled for this head)
	Weight   float32   // 0 counts as 1
}

// TrainOptions tune Train; the zero value of a field takes its default.
type TrainOptions struct {
	Heads []string // required
	// MinCount is how many examples a token must be found in to be in
	// the vocabulary (default 2: a token of one example only teaches the
	// model that example).
	MinCount int
	Epochs   int     // passes over the examples (default 12)
	Rate     float64 // AdaGrad's learning rate (default 0.2)
	L2       float64 // weight decay per update (default 1e-6)
	Seed     uint64  // the order of the examples in each pass
	// Average trains this many models, with seeds Seed, Seed+1, …, and
	// averages their weights (default 1). One model's weights depend on
	// the order it saw the examples in: on the corpus, three seeds parked
	// from 18 to 28.5 of 1,000 texts of a source kept aside. The mean of a
	// few is steadier, and, the model being linear, scores as their
	// mean logit would (up to the int8 rounding).
	Average int
	// Norm normalizes a text's sum of token weights by its number of
	// tokens, in training as in Score (default NormSum).
	Norm Norm
}

// Train fits one logistic regression per head with AdaGrad, each head's
// classes weighted to count alike, averages the weights of o.Average such
// fits, and quantizes them to int8. The same examples and options give
// the same model, byte for byte.
func Train(examples []Example, o TrainOptions) (*Model, error) {
	h := len(o.Heads)
	if h == 0 || h > maxHeads {
		return nil, fmt.Errorf("textclass: %d heads, want 1..%d", h, maxHeads)
	}
	for _, name := range o.Heads {
		if name == "" || len(name) > maxNameLen {
			return nil, fmt.Errorf("textclass: head name %q", name)
		}
	}
	if o.MinCount == 0 {
		o.MinCount = 2
	}
	if o.MinCount < 0 {
		return nil, fmt.Errorf("textclass: minimum count %d", o.MinCount)
	}
	if o.Epochs == 0 {
		o.Epochs = 12
	}
	if o.Rate == 0 {
		o.Rate = 0.2
	}
	if o.L2 == 0 {
		o.L2 = 1e-6
	}
	if o.Norm == 0 {
		o.Norm = NormSum
	}
	if o.Average == 0 {
		o.Average = 1
	}
	if o.Average < 0 {
		return nil, fmt.Errorf("textclass: average of %d models", o.Average)
	}
	if o.Norm > NormMean {
		return nil, fmt.Errorf("textclass: normalization %d: want sum, sqrt or mean", o.Norm)
	}
	if len(examples) == 0 {
		return nil, errors.New("textclass: no examples")
	}
	for i, e := range examples {
		if len(e.Labels) != h {
			return nil, fmt.Errorf("textclass: example %d has %d labels, want %d", i, len(e.Labels), h)
		}
	}
	vocab, toks := vocabulary(examples, o.MinCount)
	if len(vocab) > maxVocab {
		return nil, fmt.Errorf("textclass: %d features: want at most %d (raise MinCount)", len(vocab), maxVocab)
	}
	// The factor each example's sum is normalized by.
	factor := make([]float64, len(examples))
	for i := range toks {
		factor[i] = o.Norm.factor(len(toks[i]))
	}
	// Class weights: each head's positives and negatives weigh alike.
	pos, neg := make([]float64, h), make([]float64, h)
	for _, e := range examples {
		for j, y := range e.Labels {
			switch {
			case y >= 0.5:
				pos[j] += weight(e)
			case y >= 0:
				neg[j] += weight(e)
			}
		}
	}
	cw := make([][2]float64, h) // [negative, positive]
	for j := range h {
		if pos[j] == 0 || neg[j] == 0 {
			return nil, fmt.Errorf("textclass: head %s needs examples of both classes (%v positive, %v negative)", o.Heads[j], pos[j], neg[j])
		}
		total := pos[j] + neg[j]
		cw[j] = [2]float64{total / (2 * neg[j]), total / (2 * pos[j])}
	}
	// The fits are independent: they run side by side, and their weights
	// are summed in seed order, so the result does not depend on which
	// finishes first.
	fits := make([]struct{ w, bias []float64 }, o.Average)
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for k := range fits {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			fits[k].w, fits[k].bias = fit(examples, toks, len(vocab), factor, cw, o, o.Seed+uint64(k))
		}()
	}
	wg.Wait()
	w := make([]float64, len(vocab)*h)
	bias := make([]float64, h)
	for _, f := range fits {
		for i := range w {
			w[i] += f.w[i] / float64(o.Average)
		}
		for j := range bias {
			bias[j] += f.bias[j] / float64(o.Average)
		}
	}
	m := quantize(o, w, bias)
	m.vocab = vocab
	m.index = newTable(vocab)
	return m, nil
}

// vocabulary returns the tokens found in at least minCount examples, in
// increasing order, and each example's tokens as indexes into it (tokens
// outside it dropped, as Score drops them).
func vocabulary(examples []Example, minCount int) ([]uint32, [][]int32) {
	raw := make([][]uint32, len(examples))
	count := map[uint32]int{}
	last := map[uint32]int{} // the last example (plus one) a token was counted for
	for i, e := range examples {
		Tokens(e.Norm, e.Features, func(t uint32) {
			raw[i] = append(raw[i], t)
			if last[t] != i+1 {
				last[t] = i + 1
				count[t]++
			}
		})
	}
	var vocab []uint32
	for t, c := range count {
		if c >= minCount {
			vocab = append(vocab, t)
		}
	}
	slices.Sort(vocab)
	index := make(map[uint32]int32, len(vocab))
	for i, t := range vocab {
		index[t] = int32(i)
	}
	toks := make([][]int32, len(examples))
	for i, ts := range raw {
		for _, t := range ts {
			if k, ok := index[t]; ok {
				toks[i] = append(toks[i], k)
			}
		}
	}
	return vocab, toks
}

// fit runs AdaGrad over the examples once per epoch, in an order drawn
// from seed, and returns the weights (feature-major, one per head) and
// the biases.
func fit(examples []Example, toks [][]int32, features int, factor []float64, cw [][2]float64, o TrainOptions, seed uint64) (w, bias []float64) {
	h := len(o.Heads)
	w = make([]float64, features*h)
	g2 := make([]float64, len(w))
	bias = make([]float64, h)
	bg2 := make([]float64, h)
	order := make([]int, len(examples))
	for i := range order {
		order[i] = i
	}
	for epoch := range o.Epochs {
		rng := rand.New(rand.NewPCG(seed, uint64(epoch)))
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, i := range order {
			e := examples[i]
			for j, y := range e.Labels {
				if y < 0 {
					continue
				}
				sum := 0.0
				for _, t := range toks[i] {
					sum += w[int(t)*h+j]
				}
				p := 1 / (1 + math.Exp(-(bias[j] + sum*factor[i])))
				c := cw[j][0]
				if y >= 0.5 {
					c = cw[j][1]
				}
				g := (p - float64(y)) * c * weight(e)
				bg2[j] += g * g
				bias[j] -= o.Rate * g / (math.Sqrt(bg2[j]) + 1e-8)
				// Each token's weight enters the logit times the factor.
				gt := g * factor[i]
				for _, t := range toks[i] {
					k := int(t)*h + j
					gk := gt + o.L2*w[k]
					g2[k] += gk * gk
					w[k] -= o.Rate * gk / (math.Sqrt(g2[k]) + 1e-8)
				}
			}
		}
	}
	return w, bias
}

func weight(e Example) float64 {
	if e.Weight <= 0 {
		return 1
	}
	return float64(e.Weight)
}

// quantize turns the float weights into int8 with one scale per head.
func quantize(o TrainOptions, w, bias []float64) *Model {
	h := len(o.Heads)
	m := &Model{heads: append([]string(nil), o.Heads...), norm: o.Norm, bias: make([]float32, h),
		scale: make([]float32, h), w: make([]int8, len(w))}
	for j := range h {
		m.bias[j] = float32(bias[j])
		max := 0.0
		for k := j; k < len(w); k += h {
			max = math.Max(max, math.Abs(w[k]))
		}
		if max == 0 {
			m.scale[j] = 1
			continue
		}
		m.scale[j] = float32(max / 127)
		for k := j; k < len(w); k += h {
			m.w[k] = int8(math.Round(w[k] / max * 127))
		}
	}
	return m
}
