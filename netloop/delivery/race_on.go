//go:build race

package delivery

// raceEnabled: built with -race, where a released message is poisoned.
const raceEnabled = true
