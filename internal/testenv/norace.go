//go:build !race

package testenv

// Race: the race detector is on (see race.go).
const Race = false
