//go:build race

package policy

// raceStride thins the differential test's corpus under the race
// detector, which slows OPA's evaluator about tenfold: every raceStride-th
// call is evaluated.
const raceStride = 4
