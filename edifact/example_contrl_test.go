package edifact_test

import (
	"errors"
	"os"
	"strings"
	"time"

	"github.com/lazaret/lazaret/edifact"
)

// A UNT count that is not a number, answered in the interchange's own
// syntax version with its identification qualifiers kept.
func ExampleWriteCONTRL() {
	in := "UNB+UNOA:4+CARRIER:ZZZ+PORT:ZZZ+20261201:0900+IC42++++1'" +
		"UNH+M1+IFTMIN:D:99B:UN'BGM+610+BK1+9'UNT+X+M1'UNZ+1+IC42'"
	ic, err := edifact.Parse(strings.NewReader(in), edifact.Limits{}, nil)
	rep := edifact.ContrlReport{Interchange: ic, Envelope: edifact.ReadEnvelope(strings.NewReader(in), edifact.Limits{}),
		Reference: edifact.ControlReference("IC42", "attempt 1"), Now: time.Date(2026, 12, 1, 9, 5, 0, 0, time.UTC)}
	if ic.Open != nil {
		rep.Messages = append(rep.Messages, *ic.Open)
	}
	var se *edifact.SyntaxError
	if errors.As(err, &se) {
		rep.Err = se
	}
	edifact.WriteCONTRL(os.Stdout, rep)
	// Output:
	// UNA:+.? '
	// UNB+UNOA:4+PORT:ZZZ+CARRIER:ZZZ+20261201:0905+4FEA350EEC8AAB'
	// UNH+1+CONTRL:4:1:UN'
	// UCI+IC42+CARRIER:ZZZ+PORT:ZZZ+4'
	// UCM+M1+IFTMIN:D:99B:UN+4+37+UNT+1'
	// UNT+4+1'
	// UNZ+1+4FEA350EEC8AAB'
}
