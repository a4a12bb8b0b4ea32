//go:build race

package policy_test

// raceEnabled: the race detector slows OPA's evaluator about tenfold, so
// the corpus tests thin their texts under it.
const raceEnabled = true
