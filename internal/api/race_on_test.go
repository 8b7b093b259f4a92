//go:build race

package api_test

// raceDetector: the race detector slows decoding several times over.
const raceDetector = true
