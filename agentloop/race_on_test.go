//go:build race

package agentloop_test

// raceOn says the race detector is on, which makes the heap test run
// fewer sessions (it is some ten times slower).
const raceOn = true
