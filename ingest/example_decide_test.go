package ingest_test

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// ExamplePolicy_Decide routes one failure of each kind through the default
// policy: Decide is pure (no I/O), so a library user can ask where an
// error would send an item before anything is recorded.
func ExamplePolicy_Decide() {
	p := ingest.DefaultPolicy()
	denied := &os.PathError{Op: "open", Path: "/ingest/m.tif", Err: fs.ErrPermission}
	for _, c := range []struct {
		what             string
		err              error
		attempt, retries int
	}{
		{"a sound master", nil, 1, 0},
		{"a corrupt IFD", &tiff.FormatError{Page: 1, Offset: 8, Code: "tiff.ifd-loop", Err: tiff.ErrBadEntry}, 1, 0},
		{"a policy refusal", &validate.PolicyError{Page: 2, Offset: 4096, Code: "policy.sample-format", Reason: "complex-float"}, 1, 0},
		{"an unreadable file, first try", denied, 1, 0},
		{"the same, retries spent", denied, 1, p.MaxRetry},
		{"a policy refusal, replayed to the cap", &validate.PolicyError{Code: "policy.sample-format"}, p.PoisonCap, 0},
	} {
		d := p.Decide(c.err, c.attempt, c.retries)
		if d.Class == "" {
			fmt.Printf("%s: passed -> %s\n", c.what, d.Destination)
			continue
		}
		fmt.Printf("%s: %s %s -> %s\n", c.what, d.Class, d.Code, d.Destination)
	}
	// Output:
	// a sound master: passed -> accept
	// a corrupt IFD: structural tiff.ifd-loop -> dead-letter
	// a policy refusal: semantic policy.sample-format -> quarantine
	// an unreadable file, first try: transient io.permission -> retry
	// the same, retries spent: transient io.permission -> dead-letter
	// a policy refusal, replayed to the cap: semantic policy.sample-format -> audit-hold
}
