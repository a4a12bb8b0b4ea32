package search

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory/storeapi"
)

func TestPartTextHolding(t *testing.T) {
	summaries := []string{"Cedar tea", "", "tea, tea and more TEA", "ginger", "a cedarwood box", "", "tea"}
	part := partView{memo: new(memo), chunks: [][]*entry{nil, nil}}
	for i, s := range summaries {
		part.chunks[i/4] = append(part.chunks[i/4], &entry{ActiveEntry: storeapi.ActiveEntry{ID: fmt.Sprint(i), Summary: s}}) // no lower: derived
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
		partTextOf(part).holding(tc.word, func(e *entry) bool {
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
	if partTextOf(part) != part.memo.load(partTextKey{}) {
		t.Fatal("the joined text is not kept in the part's memo")
	}
}

func TestMemoKeys(t *testing.T) {
	type k1 struct{}
	type k2 struct{}
	var m memo
	if m.load(k1{}) != nil {
		t.Fatal("an empty memo holds something")
	}
	m.store(k1{}, 1)
	m.store(k2{}, "two")
	m.store(k1{}, 3)
	if m.load(k1{}) != 3 || m.load(k2{}) != "two" {
		t.Fatalf("memo holds %v and %v", m.load(k1{}), m.load(k2{}))
	}
	var none *memo
	none.store(k1{}, 1)
	if none.load(k1{}) != nil {
		t.Fatal("a nil memo holds something")
	}
}
