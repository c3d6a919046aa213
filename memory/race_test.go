//go:build race

package memory

// raceEnabled: the tests run under the race detector, where SQLite (C
// translated to Go) runs about ten times slower.
const raceEnabled = true
