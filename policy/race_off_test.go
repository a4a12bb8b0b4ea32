//go:build !race

package policy

const raceStride = 1
