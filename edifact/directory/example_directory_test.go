package directory_test

import (
	"fmt"
	"strings"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
)

// A message is checked against the segment table of its release: here an
// APERAK D:96A whose document number is one character too long, whose
// DTM lacks its qualifier and which carries a segment APERAK does not have.
func ExampleMessage_Validate() {
	in := "UNB+UNOC:3+SENDER+RECIPIENT+261201:1200+1'" +
		"UNH+1+APERAK:D:96A:UN'BGM+23+" + strings.Repeat("9", 36) + "+9'DTM+:20261201:102'QTY+1:5'UNT+5+1'UNZ+1+1'"
	edifact.Parse(strings.NewReader(in), edifact.Limits{}, func(m *edifact.Message) error {
		def := directory.Lookup(m.Version, m.Release, m.Type)
		def.Validate(m, directory.Options{}, func(f directory.Finding) { fmt.Println(f) })
		return nil
	})
	// Output:
	// segment 2 (BGM) element 2 at byte 71: too-long: 36 characters, 1004 is an..35
	// segment 3 (DTM) element 1:1 at byte 114: component-missing: mandatory component 2005 of C507 missing
	// segment 4 (QTY) at byte 128: segment-unexpected: segment QTY is not allowed here in APERAK D:96A
}
