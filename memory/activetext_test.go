package memory

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPartTextHolding(t *testing.T) {
	summaries := []string{"Cedar tea", "", "tea, tea and more TEA", "ginger", "a cedarwood box", "", "tea"}
	part := ActivePart{Memo: new(Memo), Chunks: [][]*ActiveEntry{nil, nil}}
	for i, s := range summaries {
		part.Chunks[i/4] = append(part.Chunks[i/4], &ActiveEntry{ID: fmt.Sprint(i), Summary: s}) // no Lower: derived
	}
	for _, tc := range []struct {
		word string
		want []int
	}{
		{"tea", []int{0, 2, 6}},
		{"cedar", []int{0, 4}},
		{"ginger", []int{3}},
		{"box", []int{4}},
		{"a", []int{0, 2, 4, 6}},
		{"zebra", nil},
		{"tea,", []int{2}},
	} {
		var got []int
		partTextOf(part).holding(tc.word, func(e *ActiveEntry) bool {
			i, _ := strconv.Atoi(e.ID)
			if !strings.Contains(strings.ToLower(summaries[i]), tc.word) {
				t.Errorf("%q: entry %d (%q) does not hold it", tc.word, i, summaries[i])
			}
			got = append(got, i)
			return true
		})
		if !slices.Equal(got, tc.want) {
			t.Errorf("entries holding %q: %v, want %v", tc.word, got, tc.want)
		}
	}
	if partTextOf(part) != part.Memo.Load(partTextKey{}) {
		t.Fatal("the joined text is not kept in the part's memo")
	}
}

func TestMemoKeys(t *testing.T) {
	type k1 struct{}
	type k2 struct{}
	var m Memo
	if m.Load(k1{}) != nil {
		t.Fatal("an empty memo holds something")
	}
	m.Store(k1{}, 1)
	m.Store(k2{}, "two")
	m.Store(k1{}, 3)
	if m.Load(k1{}) != 3 || m.Load(k2{}) != "two" {
		t.Fatalf("memo holds %v and %v", m.Load(k1{}), m.Load(k2{}))
	}
	var none *Memo
	none.Store(k1{}, 1)
	if none.Load(k1{}) != nil {
		t.Fatal("a nil memo holds something")
	}
}
