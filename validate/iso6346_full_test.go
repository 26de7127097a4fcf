package validate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/validate"
)

// ISO 6346 in full: 11 characters, a 3-letter owner code, category U, J
// or Z, a 6-digit serial number, the check digit. Each part has its own
// reason, and a number that is not plain capital letters and digits is
// echoed quoted (control characters escaped) and cut, never raw.
func TestContainerNumberInFull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ number, reason string }{
		{"CSQU305438", "container CSQU305438: 10 characters, want 11"},
		{"CSQU30543833", "container \"CSQU30543833\": 12 characters, want 11"},
		{"C5QU3054383", "container C5QU3054383: owner code \"C5Q\", want 3 capital letters"},
		{"CSQX3054383", "container CSQX3054383: category 'X', want U, J or Z"},
		{"CSQU30543A3", "container CSQU30543A3: serial number \"30543A\", want 6 digits"},
		{"CSQU3054384", "container CSQU3054384: check digit '4', want 3"},
		{"CSQU305438X", "container CSQU305438X: check digit 'X', want 3"},
		{"CSQU\x1b05438\x00", "container \"CSQU\\x1b05438\\x00\": serial number \"\\x1b05438\", want 6 digits"},
		{strings.Repeat("A", 40), "container \"AAAAAAAAAAAAAAAAAAAA\"...: 40 characters, want 11"},
	} {
		err := validate.CheckContainer(tc.number)
		var ce *validate.ContainerError
		if !errors.As(err, &ce) {
			t.Errorf("%q accepted", tc.number)
			continue
		}
		if got := err.Error(); !strings.HasPrefix(got, tc.reason) {
			t.Errorf("%q: %q, want %q...", tc.number, got, tc.reason)
		}
		if strings.ContainsAny(err.Error(), "\x00\x1b") {
			t.Errorf("%q: control characters echoed raw: %q", tc.number, err.Error())
		}
	}
}

// The rule refuses every EQD+CN number that is not ISO 6346 in full, not
// only those that look like one: a 10-character number, a digit in the
// owner code, a letter in the serial were accepted before unchecked.
func TestContainerRuleChecksEveryNumber(t *testing.T) {
	t.Parallel()
	both := [2]string{"CZ", "CN"}
	for _, number := range []string{"CSQU305438", "C5QU3054383", "CSQU30543A3", "CSQU3054384"} {
		m := message(t, fixtures.IFTMIN("1", both, "NLRTM", "SGSIN", number, "847130"))
		_, err := validate.CheckMessage(m, validate.Builtin(), validate.DefaultEDIRules())
		var re *validate.RuleError
		if !errors.As(err, &re) || re.Code != "edifact.container.check-digit" || re.Tag != "EQD" || re.Element != 2 {
			t.Errorf("%s: %v", number, err)
		}
	}
	m := message(t, fixtures.IFTMIN("1", both, "NLRTM", "SGSIN", "CSQU3054383", "847130"))
	if _, err := validate.CheckMessage(m, validate.Builtin(), validate.DefaultEDIRules()); err != nil {
		t.Errorf("CSQU3054383: %v", err)
	}
}
