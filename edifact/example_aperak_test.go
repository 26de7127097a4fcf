package edifact_test

import (
	"os"
	"strings"
	"time"

	"github.com/lazaret/lazaret/edifact"
)

// A message whose UN/LOCODE is not in the registry, answered by an APERAK
// in the sender's separators: the error code, the position in words, and
// the message and segment by reference.
func ExampleWriteAPERAK() {
	in := "UNA:+,? '\nUNB+UNOC:3+CARRIER:ZZZ+PORT:ZZZ+261201:0900+IC42'\n" +
		"UNH+M1+IFTMIN:D:99B:UN'BGM+610+BK1+9'LOC+11+NLZZZ:139:6'UNT+3+M1'UNZ+1+IC42'"
	rep := edifact.AperakReport{Envelope: edifact.ReadEnvelope(strings.NewReader(in), edifact.Limits{}),
		Messages: []edifact.AperakMessage{{Ref: "M1", Type: "IFTMIN", Number: 1, Offset: 76, Errors: []edifact.AperakError{
			{Code: "LOCUNK", Segment: 3, Tag: "LOC", Element: 2, Component: 1, Offset: 115, Text: "UN/LOCODE NLZZZ is not in the registry"}}}},
		Reference: edifact.ControlReference("IC42", "attempt 1"), Now: time.Date(2026, 12, 1, 9, 5, 0, 0, time.UTC)}
	edifact.WriteAPERAK(os.Stdout, rep)
	// Output:
	// UNA:+,? '
	// UNB+UNOC:3+PORT:ZZZ+CARRIER:ZZZ+261201:0905+4FEA350EEC8AAB'
	// UNH+1+APERAK:D:01B:UN'
	// BGM+305+4FEA350EEC8AAB-1+27'
	// DTM+137:202612010905:203'
	// RFF+ACW:M1'
	// RFF+ZZZ:IC42'
	// NAD+MS+PORT'
	// NAD+MR+CARRIER'
	// ERC+LOCUNK::ZZZ'
	// FTX+AAO+++segment 3 (LOC), element 2, component 1, byte 115:UN/LOCODE NLZZZ is not in the registry'
	// RFF+ACW:M1:3'
	// UNT+11+1'
	// UNZ+1+4FEA350EEC8AAB'
}
