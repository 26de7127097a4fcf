package validate_test

import (
	"bytes"
	"fmt"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/validate"
)

func ExampleViewOf() {
	var b bytes.Buffer
	fixtures.WriteInterchange(&b, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "1",
		Msgs: []fixtures.Msg{fixtures.VERMAS("7", fixtures.ContainerOK1, 24000)}})
	edifact.Parse(&b, edifact.Limits{}, func(m *edifact.Message) error {
		v := validate.ViewOf(m)
		fmt.Printf("%s %s: document %s (segment %d, byte %d)\n", v.Type, v.Ref, v.Document.Value, v.Document.Segment, v.Document.Offset)
		for _, p := range v.Parties {
			fmt.Printf("party %s %s\n", p.Qualifier.Value, p.ID.Value)
		}
		for _, l := range v.Locations {
			fmt.Printf("location %s %s (list %s, agency %s)\n", l.Qualifier.Value, l.Code.Value, l.CodeList, l.Agency)
		}
		for _, e := range v.Equipment {
			fmt.Printf("container %s (%s) at byte %d, VGM %s %s\n", e.Number.Value, e.SizeType.Value, e.Number.Offset, e.VGM[0].Value.Value, e.VGM[0].Unit)
		}
		return nil
	})
	// Output:
	// VERMAS 7: document VGM7 (segment 2, byte 67)
	// party TB MAEU
	// location 76 NLRTM (list 139, agency 6)
	// container CSQU3054383 (45G1) at byte 128, VGM 24000 KGM
}
