//go:build unix

package main

import "syscall"

// descriptorLimit is the process's file descriptor limit (RLIMIT_NOFILE,
// the soft limit Go raised to the hard one at start), 1024 when unknown.
func descriptorLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 {
		return 1024
	}
	return int(min(r.Cur, 1<<20))
}
