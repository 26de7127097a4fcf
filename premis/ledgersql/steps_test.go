package ledgersql

import (
	"bytes"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
)

// FuzzSteps: a steps text, whatever its bytes, decodes to 1 to MaxSteps
// steps or an error; in any text it accepts, plain or compact, and in
// what the ledger writes, whatever a step's free text holds, each step
// opens exactly once with stepOpen and a filter's needle is found exactly
// where a step of that type (and outcome) is: the SQL that selects and
// counts steps by substring is exact.
func FuzzSteps(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	rec := acceptedRecord()
	compact, err := EncodeSteps(rec)
	if err != nil {
		f.Fatal(err)
	}
	seeds.Add(`[{"type":"fix","outcome":"suc"}]`, "sha256 abc", `{"type":"val",`, "fmt/353")
	seeds.Add(`[{"type":"val","outcome":"war","detail":"x"},{"type":"fix","outcome":"suc"}]`, `"outcome":"war"`, `{"type":`, "")
	seeds.Add(`[{"outcome":"suc","type":"fix"}]`, "\x00\"", "\u2028<>&", `\"`)
	seeds.Add(`[]`, "", "", "")
	seeds.Add(`[{"type":"fix","outcome":"suc"},{"type":"for","outcome":"suc"},{"type":"val","outcome":"suc"},{"type":"ing","outcome":"suc"}]`, "a", "b", "c")
	seeds.Add(compact, rec.SHA256, "tiff (fmt/353)", rec.PUID)
	seeds.Add(strings.Replace(compact, `"suc"}]`, `"war"}]`, 1), "", "", "")
	seeds.Add(`[{"type":"fix","outcome":"suc"}]`+"\na", "", "", "")
	packed, err := EncodeStepsPacked(rec)
	if err != nil {
		f.Fatal(err)
	}
	seeds.Add(packed, rec.SHA256, `["val",`, rec.PUID)
	seeds.Add(`[["fix","suc"]]`+"\n"+strings.SplitN(compact, "\n", 2)[1], "", `","`, "")
	f.Fuzz(func(t *testing.T, column, detail, note, puid string) {
		for _, packed := range []bool{false, true} {
			steps, err := decodeSteps(column, rec, packed)
			if err == nil && ((len(steps) == 0) != (column == "") || len(steps) > premis.MaxSteps) {
				t.Fatalf("DecodeSteps(%q) = %d steps", column, len(steps))
			}
			if err == nil {
				needlesFind(t, column, steps, packed)
			}
		}
		// As Prepare leaves them before any append: valid UTF-8.
		detail, note, puid = premis.Printable(detail), premis.Printable(note), premis.Printable(puid)
		e := &premis.Event{SHA256: note, PUID: puid, Agent: detail, Steps: []premis.Step{
			{Type: premis.FixityCheck, Outcome: premis.Success, Detail: detail, Note: note},
			{Type: premis.Validation, Outcome: premis.Warning, Detail: note, Note: detail, PUID: puid},
		}}
		for _, packed := range []bool{false, true} {
			text, err := encodeSteps(e, packed)
			if err != nil {
				if plain, _ := json.Marshal(e.Steps); len(plain) > MaxStepsText || packed && strings.Contains(err.Error(), "bytes packed") {
					return // refused on the way in: DecodeSteps would refuse it
				}
				t.Fatal(err)
			}
			back, err := decodeSteps(text, e, packed)
			if err != nil || !slices.Equal(back, e.Steps) {
				t.Fatalf("the ledger's own steps text %q reads back as %+v, %v", text, back, err)
			}
			needlesFind(t, text, e.Steps, packed)
		}
	})
}

// needlesFind fails t unless text, which holds steps, opens each step
// once and the filters' needles count exactly the steps they select.
func needlesFind(t *testing.T, text string, steps []premis.Step, packed bool) {
	t.Helper()
	open := stepOpen
	if packed {
		open = stepSep
	}
	if n := strings.Count(text, open); n != len(steps) {
		t.Fatalf("%q opens %d steps, holds %d", text, n, len(steps))
	}
	for _, f := range []premis.Filter{
		{Types: []premis.EventType{premis.FixityCheck}},
		{Types: []premis.EventType{premis.Validation}, Outcome: premis.Warning},
		{Types: []premis.EventType{premis.FixityCheck}, Outcome: premis.Warning},
		{Types: []premis.EventType{premis.Ingestion}},
		{Outcome: premis.Success},
		{Outcome: premis.Warning},
	} {
		want := 0
		for _, s := range steps {
			if (len(f.Types) == 0 || s.Type == f.Types[0]) && (f.Outcome == "" || s.Outcome == f.Outcome) {
				want++
			}
		}
		got := 0
		for _, n := range stepNeedles(f, packed) {
			got += strings.Count(text, n)
		}
		if got != want {
			t.Fatalf("%+v: the needles occur %d times in %q, want %d", f, got, text, want)
		}
	}
}

// acceptedRecord is an accepted master's record as the worker writes it.
func acceptedRecord() *premis.Event {
	sha := "959a7cac0f522d4c23d6a0ddee3e16d5bb05ce1bd5181f0d7dfa4b3ad70d3fcb"
	return &premis.Event{Type: premis.Ingestion, SHA256: sha, PUID: "fmt/353", Agent: "lazaret/0.9.0", Steps: []premis.Step{
		{Type: premis.FixityCheck, Outcome: premis.Success, Detail: "SHA-256 of the file compared with the manifest", Note: "sha256 " + sha},
		{Type: premis.FormatIdentification, Outcome: premis.Success, PUID: "fmt/353",
			Detail: "magic bytes, extension and declared format (PRONOM)", Note: "tiff (fmt/353)"},
		{Type: premis.Validation, Outcome: premis.Success, PUID: "fmt/353",
			Detail: "TIFF structure of every IFD and pixel data of every page (lazaret/0.9.0)", Note: "1 page(s), 1 checked to the pixel data"},
	}}
}

// TestStepsCompact: an accepted master's steps are stored compact, in
// under a third of their JSON, and read back equal; a row written before
// the compact form (plain JSON) still reads; and a compact text whose
// heads or body were changed is refused, not read as other steps.
func TestStepsCompact(t *testing.T) {
	rec := acceptedRecord()
	plain, _ := json.Marshal(rec.Steps)
	text, err := EncodeSteps(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "\n") || len(text) > len(plain)/3 {
		t.Fatalf("stored in %d bytes (%q), want the compact form in at most a third of the JSON's %d", len(text), text, len(plain))
	}
	t.Logf("%d bytes of JSON stored in %d", len(plain), len(text))
	for _, stored := range []string{text, string(plain)} {
		back, err := DecodeSteps(stored, rec)
		if err != nil || !slices.Equal(back, rec.Steps) {
			t.Fatalf("%q reads back as %+v, %v", stored, back, err)
		}
	}
	heads, body, _ := strings.Cut(text, "\n")
	for name, stored := range map[string]string{
		"heads say war":      strings.Replace(heads, `"suc"`, `"war"`, 1) + "\n" + body,
		"heads drop a step":  `[{"type":"fix","outcome":"suc"}]` + "\n" + body,
		"body cut":           text[:len(text)-4],
		"body not base64":    heads + "\n" + "a{" + body[2:],
		"unknown format":     heads + "\n" + "b" + body[1:],
		"plain, not written": `[{"outcome":"suc","type":"fix"}]`,
	} {
		if steps, err := DecodeSteps(stored, rec); err == nil {
			t.Errorf("%s: %q read as %+v, want an error", name, stored, steps)
		}
	}
	// The body refers to the record's digest rather than repeat it: read
	// with another, the fixity step names that one. (The chain hashes the
	// record with its steps, so a digest changed in the row is found.)
	other := *rec
	other.SHA256 = strings.Repeat("0", 64)
	if steps, err := DecodeSteps(text, &other); err != nil || steps[0].Note != "sha256 "+other.SHA256 {
		t.Errorf("read against another digest: %+v, %v", steps, err)
	}
}

// FuzzStoredEnvelope: a stored envelope, whatever its bytes, decodes to
// at most MaxEnvelope bytes or an error, never a panic; an envelope
// encoded comes back byte for byte.
func FuzzStoredEnvelope(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	row := &premis.Event{Operator: "op", BatchID: "b", CorrelationID: "c", ObjectID: "o", Path: "/x", SHA256: strings.Repeat("ab", 32)}
	good := *row
	good.Envelope = []byte(`{"v":1,"correlation_id":"c","batch_id":"b","object_id":"o","kind":"tiff","path":"/x"}`)
	stored, _ := EncodeEnvelope(&good)
	seeds.Add(stored)
	seeds.Add([]byte(`{"v":1}`))
	seeds.Add([]byte{0, 1, 0xff})
	seeds.Add([]byte{0, 2, 0xff})
	seeds.Add([]byte{0, 1, 3, 0})
	seeds.Add([]byte{0})
	f.Fuzz(func(t *testing.T, stored []byte) {
		if env, err := DecodeEnvelope(stored, row); err == nil && len(env) > MaxEnvelope {
			t.Fatalf("%d bytes decoded, more than %d", len(env), MaxEnvelope)
		}
		if len(stored) > MaxEnvelope {
			return // refused on the way in (TestEnvelopeRefusesDamage)
		}
		e := *row
		e.Envelope = stored
		enc, err := EncodeEnvelope(&e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeEnvelope(enc, row)
		if err != nil || !bytes.Equal(back, stored) {
			t.Fatalf("%q stored as %q reads back as %q, %v", stored, enc, back, err)
		}
	})
}

// BenchmarkSteps: storing and reading back an accepted master's steps,
// compact against plain JSON (what every record paid before).
func BenchmarkSteps(b *testing.B) {
	rec := acceptedRecord()
	b.Run("compact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			text, err := EncodeSteps(rec)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := DecodeSteps(text, rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			text, err := json.Marshal(rec.Steps)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := DecodeSteps(string(text), rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestWritersOutliveCollections: the compressors of envelopes and steps
// are kept across garbage collections. A new one allocates over a
// megabyte and takes milliseconds; a worker collects every few items, so
// were they kept in a sync.Pool nearly every other record would pay that.
func TestWritersOutliveCollections(t *testing.T) {
	rec := acceptedRecord()
	env := &premis.Event{Path: "/srv/ingest/b/o.tif", Envelope: []byte(`{"v":1,"correlation_id":"c","batch_id":"b","object_id":"o","kind":"tiff","path":"/srv/ingest/b/o.tif"}`)}
	encode := func() {
		if _, err := EncodeSteps(rec); err != nil {
			t.Fatal(err)
		}
		if _, err := EncodeEnvelope(env); err != nil {
			t.Fatal(err)
		}
	}
	encode()
	var before, after runtime.MemStats
	for range 3 {
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		encode()
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
			t.Fatalf("a record's steps and an envelope encoded after a collection allocated %d bytes: a compressor was made anew", n)
		}
	}
}

// TestStepsTheLedgerCannotReadAreRefused: steps whose JSON passes
// MaxStepsText are refused when written, since every read would refuse
// them (a row the ledger wrote, reported as forged by verify); their
// compact form, which would take a few hundred bytes, hid that.
func TestStepsTheLedgerCannotReadAreRefused(t *testing.T) {
	rec := acceptedRecord()
	rec.Steps[2].Note = strings.Repeat("W006: a private tag is tolerated; ", 2500)
	if text, err := EncodeSteps(rec); err == nil {
		_, derr := DecodeSteps(text, rec)
		t.Fatalf("%d bytes of steps stored in %d; reading them back: %v", len(rec.Steps[2].Note), len(text), derr)
	}
}

// TestStepsHideNothing: the compact form read back is the form written:
// line breaks inside the base64 and bytes after the DEFLATE stream, which
// the decoders would skip, are refused.
func TestStepsHideNothing(t *testing.T) {
	rec := acceptedRecord()
	text, err := EncodeSteps(rec)
	if err != nil {
		t.Fatal(err)
	}
	heads, body, _ := strings.Cut(text, "\n")
	z, err := stepsB64.DecodeString(body[1:])
	if err != nil {
		t.Fatal(err)
	}
	for name, changed := range map[string]string{
		"a line break":           heads + "\n" + body[:10] + "\n" + body[10:],
		"a carriage return":      heads + "\n" + body[:10] + "\r" + body[10:],
		"bytes after the stream": heads + "\n" + string(stepsFlate1) + stepsB64.EncodeToString(append(z, "hidden"...)),
	} {
		if steps, err := DecodeSteps(changed, rec); err == nil {
			t.Errorf("%s: read back as %d steps", name, len(steps))
		}
	}
}
