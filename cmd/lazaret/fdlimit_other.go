//go:build !unix

package main

// descriptorLimit is a conservative file descriptor budget where the
// system has no RLIMIT_NOFILE.
func descriptorLimit() int { return 1024 }
