package embedtest_test

import (
	"context"
	"testing"

	"github.com/memgate/memgate/embed/embedtest"
)

// The helper other packages use finds the example above the
// OpenClaw plugin's threshold.
func TestIndexFindsTheExample(t *testing.T) {
	srv := embedtest.NewServer(t, embedtest.Options{})
	recs := map[string]string{"r1": "I prefer dark mode in every editor", "r2": "the release ships on Friday"}
	x := srv.Index(t, func(ctx context.Context, fn func(id, text string) bool) error {
		for id, text := range recs {
			if !fn(id, text) {
				break
			}
		}
		return nil
	})
	embedtest.WaitLen(t, x, 2)
	got, err := x.Scores(t.Context(), "what editor theme does alice like?", []string{"r1", "r2"})
	if err != nil {
		t.Fatal(err)
	}
	if got["r1"] <= 0.1 || got["r2"] >= got["r1"] {
		t.Errorf("scores %v: want r1 above 0.1 and above r2", got)
	}
	if srv.Calls() == 0 {
		t.Error("the fake counted no call")
	}
}
