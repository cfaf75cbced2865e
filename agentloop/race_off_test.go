//go:build !race

package agentloop_test

const raceOn = false
