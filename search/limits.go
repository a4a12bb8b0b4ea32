package search

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/memgate/memgate/memory"
)

// Bounds on what one read may ask, the same for every dialect (Mem0
// filters, the native list query, the MCP tools). A read over them is
// refused with EINVALID naming the bound, before or while it runs: never
// cut short silently.
const (
	// MaxInValues bounds the values of one in or nin. Mem0 clients list a
	// handful of ids or categories; a thousand is generous.
	MaxInValues = 1000
	// MaxOperandBytes bounds a string operand (an id, a word to look for,
	// a metadata value) and the JSON size of any other one. A summary
	// holds at most memory.MaxSummaryBytes (16 KiB); clients look for a
	// word or a phrase.
	MaxOperandBytes = 4 << 10
	// MaxWork bounds the work of one read: the records it tests times the
	// filter's cost per record (Filter.cost). A cheap filter over 10,000
	// records costs tens of thousands; this is a few hundred milliseconds
	// of CPU at most.
	MaxWork = 1 << 24
	// MaxQueryTerms bounds the distinct terms of a search's query (words
	// less stop words, stemmed): ranking keeps a count per term and
	// record. A recall query is a sentence or a message; a thousand
	// distinct words is pages of prose.
	MaxQueryTerms = 1024
	// checkEvery is how many records a read tests between two looks at
	// its context: a read whose client left stops within that many.
	checkEvery = 128
)

// maxWork is MaxWork, lowered by tests.
var maxWork int64 = MaxWork

// textUnit is the bytes of summary one unit of work reads: a condition on
// the text costs one unit, and one more for each textUnit of the summary
// it lowers or searches.
const textUnit = 256

// errTooCostly is the answer to a read over MaxWork.
func errTooCostly(tested int) error {
	return memory.Errorf(memory.EINVALID,
		"filters: this read is too costly: after %d records it exceeds the work budget of %d "+
			"(records tested × conditions per record, text conditions counting the text they search, a search its query's words); "+
			"name fewer or cheaper conditions, a shorter query, or a narrower scope (user_id, agent_id, app_id, run_id)", tested, maxWork)
}

// CheckQuery refuses a query of more than MaxQueryTerms distinct terms
// with EINVALID. Search checks it; callers that rank without an index
// (Rank) check it first.
func CheckQuery(text string) error {
	if n := len(uniq(Tokenize(text))); n > MaxQueryTerms {
		return memory.Errorf(memory.EINVALID, "query has %d distinct words, more than the %d a search takes; search with fewer words", n, MaxQueryTerms)
	}
	return nil
}

// checkOperand bounds a string operand.
func checkOperand(s string) error {
	if len(s) > MaxOperandBytes {
		return fmt.Errorf("an operand is %d bytes, more than the %d allowed", len(s), MaxOperandBytes)
	}
	return nil
}

// operandSize is the JSON size of an operand as encoding/json decodes it,
// give or take quoting: enough to bound it. It stops counting past limit.
func operandSize(v any, limit int) int {
	switch t := v.(type) {
	case string:
		return len(t) + 2
	case []any:
		n := 2
		for _, it := range t {
			if n += operandSize(it, limit) + 1; n > limit {
				return n
			}
		}
		return n
	case map[string]any:
		n := 2
		for k, it := range t {
			if n += len(k) + 4 + operandSize(it, limit); n > limit {
				return n
			}
		}
		return n
	}
	return 8 // a number, a boolean or null
}

// checkValues bounds the items of an in or nin.
func checkValues(items []any) error {
	if len(items) > MaxInValues {
		return fmt.Errorf("in and nin take at most %d values, not %d", MaxInValues, len(items))
	}
	for _, it := range items {
		if n := operandSize(it, MaxOperandBytes); n > MaxOperandBytes+2 {
			return fmt.Errorf("a value of in or nin is more than %d bytes", MaxOperandBytes)
		}
	}
	return nil
}

// cost is what testing a record against f costs, in units of work: fixed
// per record, and text per textUnit bytes of the record's summary.
func (f *Filter) cost() (fixed, text int64) {
	if f.Kind != KindLeaf {
		fixed = 1
		for _, k := range f.Kids {
			kf, kt := k.cost()
			fixed, text = fixed+kf, text+kt
		}
		return fixed, text
	}
	if f.weight == 0 {
		return 1, 0 // Eq and leaves built without Leaf
	}
	return f.weight, f.textWeight
}

// checkIDs refuses an id-field operand no stored id can hold (see
// memory.CheckLookupID): such a read is bad input on every store, and
// some (PostgreSQL) cannot even look it up.
func (f *Filter) checkIDs() error {
	if f.Kind != KindLeaf {
		for _, k := range f.Kids {
			if err := k.checkIDs(); err != nil {
				return err
			}
		}
		return nil
	}
	if idOf[f.Field] == nil {
		return nil
	}
	return checkIDArg(f.Field, f.Arg)
}

func checkIDArg(field string, arg any) error {
	switch a := arg.(type) {
	case string:
		if err := memory.CheckLookupID(field, a); err != nil {
			return err
		}
	case []any:
		for _, it := range a {
			if s, ok := it.(string); ok {
				if err := memory.CheckLookupID(field, s); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// scan tests the records of one read against its filter: it charges each
// test to the read's work budget and, every checkEvery records, stops the
// read when its context is done (the client left, or a deadline passed).
type scan struct {
	ctx         context.Context
	f           *Filter
	fixed, text int64
	spent       int64
	tested      int
	skipped     int
	examined    *atomic.Int64 // the index's count of records tested, or nil
}

func newScan(ctx context.Context, f *Filter, examined *atomic.Int64) *scan {
	fixed, text := f.cost()
	return &scan{ctx: ctx, f: f, fixed: fixed, text: text, examined: examined}
}

// charge counts one record of summary bytes; an error ends the read.
func (s *scan) charge(summary int) error {
	s.tested++
	if s.examined != nil {
		s.examined.Add(1)
	}
	s.spent += s.fixed + s.text*int64(summary/textUnit)
	if s.spent > maxWork {
		return errTooCostly(s.tested)
	}
	if s.tested%checkEvery == 0 {
		if err := s.ctx.Err(); err != nil {
			return fmt.Errorf("search: the read stopped after %d records: %w", s.tested, err)
		}
	}
	return nil
}

// chargeMany counts n records read from terms counted before (a part's,
// terms.go): their text costs nothing more, each costs the fixed work,
// and the read stops between every checkEvery of them as charge does.
func (s *scan) chargeMany(n int) error {
	for n > 0 {
		k := min(n, checkEvery-s.tested%checkEvery)
		n -= k
		s.tested += k
		if s.examined != nil {
			s.examined.Add(int64(k))
		}
		if s.spent += s.fixed * int64(k); s.spent > maxWork {
			return errTooCostly(s.tested)
		}
		if s.tested%checkEvery == 0 {
			if err := s.ctx.Err(); err != nil {
				return fmt.Errorf("search: the read stopped after %d records: %w", s.tested, err)
			}
		}
	}
	return nil
}

// skip counts a record passed over untested (before a page's start): it
// costs no work, but a read whose client left stops there too.
func (s *scan) skip() error {
	if s.skipped++; s.skipped%(checkEvery*8) == 0 {
		if err := s.ctx.Err(); err != nil {
			return fmt.Errorf("search: the read stopped after passing over %d records: %w", s.skipped, err)
		}
	}
	return nil
}

// match charges r and tests it.
func (s *scan) match(r *memory.Record) (bool, error) {
	if err := s.charge(len(r.Summary)); err != nil {
		return false, err
	}
	return s.f.Match(r), nil
}

// Select returns the records of recs the filter lets through (nil: all),
// in order, within the work budget, stopping when ctx is done: for
// callers that hold records already (a handler without an index).
// Errors: EINVALID over a bound, or ctx's error.
func Select(ctx context.Context, f *Filter, recs []*memory.Record) ([]*memory.Record, error) {
	if f == nil {
		f = And()
	}
	if err := f.checkIDs(); err != nil {
		return nil, err
	}
	s := newScan(ctx, f, nil)
	out := make([]*memory.Record, 0, len(recs))
	for _, r := range recs {
		ok, err := s.match(r)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}
