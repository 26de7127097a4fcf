//go:build !unix

package pipebench

import "time"

// cpuTime is not measured here: CPU per item reads 0.
func cpuTime() time.Duration { return 0 }
