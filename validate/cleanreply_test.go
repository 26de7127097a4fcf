package validate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/validate"
)

// Control characters and NUL in the values a reply echoes (UNB sender,
// recipient and reference, the UNH reference) never reach the reply: each
// is written as %HH (ESC as %1B, NUL as %00), in the CONTRL of a broken
// envelope, the CONTRL that rejects a message for a partner that reads
// CONTRL only, and the APERAK.
func TestRepliesCarryNoControlCharacters(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "aperak", "input.edi"))
	if err != nil {
		t.Fatal(err)
	}
	dirty := strings.NewReplacer("CARRIER1:ZZ", "CARR\x1bIER1:ZZ", "LAZARET:ZZ", "LAZ\x00ARET:ZZ", "IC0020", "IC\x1b0020",
		"UNH+2+", "UNH+2\x00+", "UNT+13+2'", "UNT+13+2\x00'").Replace(string(data))
	broken := strings.Replace(dirty, "UNZ+4+", "UNZ+5+", 1)
	for _, tc := range []struct {
		name, in string
		mode     validate.ReplyMode
	}{{"business rules", dirty, validate.ReplyBoth}, {"CONTRL only", dirty, validate.ReplyContrl}, {"broken envelope", broken, validate.ReplyBoth}} {
		path := filepath.Join(t.TempDir(), "in.edi")
		if err := os.WriteFile(path, []byte(tc.in), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, contrl, aperak := replies(t, path, tc.mode)
		for kind, text := range map[string]string{"CONTRL": contrl, "APERAK": aperak} {
			if text == "" {
				continue
			}
			for i := 0; i < len(text); i++ {
				if c := text[i]; c < 0x20 && c != '\n' || c == 0x7f {
					t.Errorf("%s: %s holds byte %#x at %d:\n%q", tc.name, kind, c, i, text)
					break
				}
			}
			for _, want := range []string{"CARR%1BIER1:ZZ", "LAZ%00ARET:ZZ", "IC%1B0020"} {
				if !strings.Contains(text, want) {
					t.Errorf("%s: %s does not echo %q:\n%s", tc.name, kind, want, text)
				}
			}
			checkReply(t, tc.name+" "+kind, text)
		}
		if tc.mode == validate.ReplyContrl && !strings.Contains(contrl, "UCM+2%00+") {
			t.Errorf("%s: the CONTRL does not name message 2%%00:\n%s", tc.name, contrl)
		}
	}
}
