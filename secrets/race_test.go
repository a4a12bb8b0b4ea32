//go:build race

package secrets

// raceEnabled: the race detector makes gitleaks' detector about 15 times
// slower, so the randomized tests do less under it.
const raceEnabled = true
