package facts

import "testing"

// TestIssueExamples: the pairs issue 26 names, each with what it must be.
func TestIssueExamples(t *testing.T) {
	for _, c := range []struct {
		memory, text string
		want         Relation
	}{
		{"Alice prefers window seats on flights.", "Alice prefers window seats on flights.", Repeat},
		{"Alice prefers window seats on flights.", "alice prefers window seats on flights", Repeat},
		{"Alice prefers window seats on flights.", "Alice now prefers aisle seats on flights.", Update},
		{"The staging database is postgres-stg-2.", "The staging database moved to postgres-stg-3.", Update},
		{"项目 Atlas 的状态是开发中。", "项目 Atlas 的状态是测试中。", Update},
		{"Alice's manager is Tom", "Alice manages Tom", Distinct},
		{"Alice is allergic to peanuts", "Alice is allergic to penicillin", Possible},
		{"Alice prefers window seats on flights", "Alice prefers window seats on trains", Possible},
		{"The freezer is at -5 degrees", "The freezer is at 5 degrees", Update}, // never a repeat
		{"Alice writes C++", "Alice writes C", Distinct},
	} {
		if got, why := Compare(c.text, c.memory); got != c.want {
			t.Errorf("%q after %q: %v (%s), want %v", c.text, c.memory, got, why, c.want)
		}
	}
}
