//go:build race

package policy

// raceStride thins the differential test's corpus under the race
// detector, which slows OPA's evaluator about tenfold: every raceStride-th
// call is evaluated (the test run without -race covers them all).
const raceStride = 10
