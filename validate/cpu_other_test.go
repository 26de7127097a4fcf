//go:build !unix

package validate_test

import "time"

// processCPU is not measured here: the CPU metrics are left out.
func processCPU() time.Duration { return 0 }
