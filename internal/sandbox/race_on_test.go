//go:build race

package sandbox

const raceDetector = true
