package ledgersql

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
)

// FuzzSteps: only the steps text the ledger writes decodes, and in what it
// writes, whatever a step's free text holds, each step opens exactly once
// with stepOpen and a filter's needle is found exactly where a step of
// that type (and outcome) is: the SQL that selects and counts steps by
// substring is exact.
func FuzzSteps(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	seeds.Add(`[{"type":"fix","outcome":"suc"}]`, "sha256 abc", `{"type":"val",`, "fmt/353")
	seeds.Add(`[{"type":"val","outcome":"war","detail":"x"},{"type":"fix","outcome":"suc"}]`, `"outcome":"war"`, `{"type":`, "")
	seeds.Add(`[{"outcome":"suc","type":"fix"}]`, "\x00\"", "\u2028<>&", `\"`)
	seeds.Add(`[]`, "", "", "")
	seeds.Add(`[{"type":"fix","outcome":"suc"},{"type":"for","outcome":"suc"},{"type":"val","outcome":"suc"},{"type":"ing","outcome":"suc"}]`, "a", "b", "c")
	f.Fuzz(func(t *testing.T, column, detail, note, puid string) {
		if steps, err := DecodeSteps(column); err == nil && ((len(steps) == 0) != (column == "") || len(steps) > premis.MaxSteps) {
			t.Fatalf("DecodeSteps(%q) = %d steps", column, len(steps))
		} else if err == nil {
			if again, _ := EncodeSteps(steps); again != column {
				t.Fatalf("DecodeSteps accepted %q, which the ledger writes as %q", column, again)
			}
		}
		// As Prepare leaves them before any append: valid UTF-8.
		detail, note, puid = premis.Printable(detail), premis.Printable(note), premis.Printable(puid)
		steps := []premis.Step{
			{Type: premis.FixityCheck, Outcome: premis.Success, Detail: detail, Note: note},
			{Type: premis.Validation, Outcome: premis.Warning, Detail: note, Note: detail, PUID: puid},
		}
		text, err := EncodeSteps(steps)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeSteps(text)
		if err != nil || len(back) != 2 {
			t.Fatalf("the ledger's own steps text %q reads back as %+v, %v", text, back, err)
		}
		if n := strings.Count(text, stepOpen); n != len(steps) {
			t.Fatalf("%q opens %d steps, holds %d", text, n, len(steps))
		}
		for _, c := range []struct {
			f    premis.Filter
			want int
		}{
			{premis.Filter{Types: []premis.EventType{premis.FixityCheck}}, 1},
			{premis.Filter{Types: []premis.EventType{premis.Validation}, Outcome: premis.Warning}, 1},
			{premis.Filter{Types: []premis.EventType{premis.FixityCheck}, Outcome: premis.Warning}, 0},
			{premis.Filter{Types: []premis.EventType{premis.Ingestion}}, 0},
			{premis.Filter{Outcome: premis.Success}, 1},
			{premis.Filter{Outcome: premis.Warning}, 1},
		} {
			got := 0
			for _, n := range stepNeedles(c.f) {
				got += strings.Count(text, n)
			}
			if got != c.want {
				t.Fatalf("%+v: the needles occur %d times in %q, want %d", c.f, got, text, c.want)
			}
		}
	})
}

// FuzzStoredEnvelope: a stored envelope, whatever its bytes, decodes to
// at most MaxEnvelope bytes or an error, never a panic; an envelope
// encoded comes back byte for byte.
func FuzzStoredEnvelope(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	good, _ := EncodeEnvelope([]byte(`{"v":1,"correlation_id":"c","batch_id":"b","object_id":"o","kind":"tiff","path":"/x"}`))
	seeds.Add(good)
	seeds.Add([]byte(`{"v":1}`))
	seeds.Add([]byte{0, 1, 0xff})
	seeds.Add([]byte{0, 1, 3, 0})
	seeds.Add([]byte{0})
	f.Fuzz(func(t *testing.T, stored []byte) {
		if env, err := DecodeEnvelope(stored); err == nil && len(env) > MaxEnvelope {
			t.Fatalf("%d bytes decoded, more than %d", len(env), MaxEnvelope)
		}
		if len(stored) > MaxEnvelope {
			return // refused on the way in (TestEnvelopeRefusesDamage)
		}
		enc, err := EncodeEnvelope(stored)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeEnvelope(enc)
		if err != nil || !bytes.Equal(back, stored) {
			t.Fatalf("%q stored as %q reads back as %q, %v", stored, enc, back, err)
		}
	})
}
