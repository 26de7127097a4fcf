//go:build race

package testenv

// Race: the race detector is on (go test -race). Its shadow memory and
// instrumentation multiply a process's RSS and time, so bounds on either
// are not what a deployed worker would show; tests skip those assertions.
const Race = true
