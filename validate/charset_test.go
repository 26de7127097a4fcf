package validate_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/validate"
)

// TestFindingsShowCharsetText: the directory's findings quote a value as
// the text of the interchange's declared set: a transport stage code
// (8051) "Д" in a UNOE (ISO 8859-5) IFTMIN is warned about as "Д", not
// as "\xb4".
func TestFindingsShowCharsetText(t *testing.T) {
	t.Parallel()
	m := fixtures.IFTMIN("1", [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")
	m.Body[2] = fixtures.S("TDT", "\xb4", "V1", "1") // Д in ISO 8859-5
	var b bytes.Buffer
	if err := fixtures.WriteInterchange(&b, fixtures.Interchange{Syntax: "UNOE", Sender: "S", Recipient: "R", Ref: "1", Msgs: []fixtures.Msg{m}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "unoe.edi")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, warns := verdict(t, path, validate.DefaultEDIRules())
	if got != "accept" {
		t.Fatalf("verdict %s", got)
	}
	at := int64(strings.Index(b.String(), "TDT+") + 4)
	for _, w := range warns {
		if w.Code == "edifact.directory.code-unknown" && w.Offset != nil && *w.Offset == at {
			if !strings.Contains(w.Message, `"Д" is not a code of 8051`) {
				t.Errorf("warning %q, want the value as its text", w.Message)
			}
			return
		}
	}
	t.Errorf("no code-unknown warning at byte %d: %+v", at, warns)
}
