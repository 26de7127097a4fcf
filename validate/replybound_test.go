package validate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/validate"
)

// manyParked writes an interchange of n IFTMIN messages, each naming an
// unknown UN/LOCODE (NLZZZ), and returns its path.
func manyParked(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("UNA:+.? 'UNB+UNOC:3+CARRIER1:ZZ+LAZARET:ZZ+261130:1200+IC0041'")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "UNH+%d+IFTMIN:D:99B:UN'BGM+610+BK%d+9'DTM+137:20261130:102'TDT+20+V1+1'LOC+9+NLRTM:139:6'LOC+11+NLZZZ:139:6'"+
			"NAD+CZ+SHIPPER1::92'NAD+CN+RECEIVER1::92'GID+1+10:CT'PIA+5+847130:HS'MEA+AAE+G+KGM:12000'EQD+CN+MSKU9070323+22G1:6346:5'UNT+13+%d'", i, i, i)
	}
	fmt.Fprintf(&b, "UNZ+%d+IC0041'", n)
	path := filepath.Join(t.TempDir(), "many.edi")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A CONTRL names at most 10,000 rejected messages. With 10,000 it
// acknowledges the interchange (UCI action 7) and rejects each of them;
// with 10,001 it cannot name the last, and action 7 would acknowledge it
// ("lower levels if not explicitly rejected"): it rejects the interchange
// (UCI action 4) instead.
func TestContrlThatCannotNameEveryRejectionRejectsTheInterchange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n      int
		action string
	}{{10000, "7"}, {10001, "4"}} {
		cr, _, text, _ := replies(t, manyParked(t, tc.n), validate.ReplyContrl)
		if got := strings.Count(text, "UCM+"); got != 10000 || len(cr.Faults) != 10000 {
			t.Errorf("%d parked: %d UCMs, %d faults, want 10000", tc.n, got, len(cr.Faults))
		}
		if want := "UCI+IC0041+CARRIER1:ZZ+LAZARET:ZZ+" + tc.action + "'"; !strings.Contains(text, want) {
			t.Errorf("%d parked: no %q in the CONTRL's head:\n%s", tc.n, want, text[:min(len(text), 300)])
		}
		if cr.Unlisted != (tc.n > 10000) {
			t.Errorf("%d parked: Unlisted %v", tc.n, cr.Unlisted)
		}
		checkReply(t, fmt.Sprintf("CONTRL for %d", tc.n), text)
	}
}
