//go:build race

package guard

// raceEnabled: the race detector slows the guard's judging several times;
// the long race tests run fewer rounds under it.
const raceEnabled = true
