package premis_test

import (
	"fmt"
	"strings"

	"github.com/lazaret/lazaret/premis"
)

func ExampleWriteXML() {
	var b strings.Builder
	evs := sampleEvents()[:1] // one quarantine event
	if err := premis.WriteXML(&b, evs, premis.Software{Name: "lazaret", Version: "1.0"}); err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "eventType") || strings.Contains(line, "lazaret:failure") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// <premis:eventType authority="eventType" authorityURI="http://id.loc.gov/vocabulary/preservation/eventType" valueURI="http://id.loc.gov/vocabulary/preservation/eventType/qua">qua</premis:eventType>
	// <premis:eventOutcomeDetailExtension><lazaret:failure class="structural" code="tiff.ifd-outside-file" destination="dead-letter" offset="2916" page="3" attempt="1" batch="b1">tiff: page 3 at byte 2916: offset outside file � control</lazaret:failure>
}
