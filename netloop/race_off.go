//go:build !race

package netloop

// raceEnabled: built with -race, where a released message is poisoned.
const raceEnabled = false
