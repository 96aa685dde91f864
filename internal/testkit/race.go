//go:build race

package testkit

// raceEnabled: built with the race detector, which slows what it watches
// several times over.
const raceEnabled = true
