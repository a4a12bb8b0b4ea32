//go:build race

package main

// raceEnabled: the race detector slows the training tenfold, and the
// shipped model is the mean of ten fits; scripts/test.sh trains it
// without the detector (the fits' concurrency is textclass's, tested
// there under it).
const raceEnabled = true
