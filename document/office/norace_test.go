//go:build !race

package office

// raceDetector says these tests run under the race detector.
const raceDetector = false
