package ledgersql_test

import (
	"bytes"
	"compress/flate"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
)

// envelope is one the worker writes for a master, as submit builds it.
const envelope = `{"v":1,"correlation_id":"394d6769-a3d3-53ff-9706-2e0d2cfbdd6d","batch_id":"bench-ab0fa63c3dd7","submitter":"lazaret bench",` +
	`"object_id":"obj-000004","kind":"tiff","path":"/srv/ingest/b/m000004.tif","root":"/srv/ingest/b","rel":"m000004.tif",` +
	`"sha256":"886ae61e7391d1ae788a4aed7938bbf951ee675e61702c2125400d8c9224e101","size":2558,"dev":65024,"ino":9986568,` +
	`"manifest":{"object_id":"obj-000004","kind":"tiff","path":"m000004.tif","sha256":"886ae61e7391d1ae788a4aed7938bbf951ee675e61702c2125400d8c9224e101",` +
	`"format":"image/tiff","color_profile":"sRGB IEC61966-2.1","resolution_dpi":"400"},"attempt":1,"submitted_at":"2026-12-03T09:15:21.410606803Z"}`

// masterRow is the submission row envelope belongs to: the columns its
// envelope repeats.
func masterRow(env []byte) *premis.Event {
	return &premis.Event{Operator: "lazaret bench", BatchID: "bench-ab0fa63c3dd7", CorrelationID: "394d6769-a3d3-53ff-9706-2e0d2cfbdd6d",
		ObjectID: "obj-000004", Path: "/srv/ingest/b/m000004.tif", SHA256: "886ae61e7391d1ae788a4aed7938bbf951ee675e61702c2125400d8c9224e101",
		Envelope: env}
}

// TestEnvelopeRoundTrips: an envelope comes back byte for byte, stored
// compressed when that is shorter (a worker's is, to under a fifth of
// it), as it is when not (and as every row of before holds it); one that
// begins with byte 0 is never stored as it is, since it would read as
// compressed. A row that repeats nothing of its envelope round-trips too.
func TestEnvelopeRoundTrips(t *testing.T) {
	for _, env := range [][]byte{nil, []byte(`{"v":1}`), []byte(envelope), {0, 1, 2}, {0}, bytes.Repeat([]byte("ab"), 4000)} {
		for _, row := range []*premis.Event{masterRow(env), {Envelope: env}, {Path: strings.Repeat("p", 2000), Envelope: env}} {
			stored, err := ledgersql.EncodeEnvelope(row)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ledgersql.DecodeEnvelope(stored, row)
			if err != nil || !bytes.Equal(back, env) {
				t.Errorf("%.20q: stored as %d bytes, read back %.20q, %v", env, len(stored), back, err)
			}
			if len(env) > 0 && env[0] == 0 && bytes.Equal(stored, env) {
				t.Errorf("%q is stored as it is", env)
			}
		}
	}
	stored, _ := ledgersql.EncodeEnvelope(masterRow([]byte(envelope)))
	alone, _ := ledgersql.EncodeEnvelope(&premis.Event{Envelope: []byte(envelope)})
	t.Logf("a master's envelope: %d bytes, stored in %d against its row, %d against no row", len(envelope), len(stored), len(alone))
	if len(stored) > len(envelope)/5 {
		t.Errorf("a master's envelope of %d bytes is stored in %d, want at most a fifth", len(envelope), len(stored))
	}
	if len(stored) > len(alone)*2/3 {
		t.Errorf("against its row a master's envelope takes %d bytes, against no row %d: the row saves less than a third", len(stored), len(alone))
	}
	if small, _ := ledgersql.EncodeEnvelope(&premis.Event{Envelope: []byte(`{"v":1}`)}); string(small) != `{"v":1}` {
		t.Errorf("a short envelope is stored as %q, which is longer", small)
	}
}

// TestEnvelopeFormat1Reads: an envelope stored by a build before the
// row's dictionary (envelopeFlate1, this one written by 56ae7bc's worker)
// reads back whatever its row holds.
func TestEnvelopeFormat1Reads(t *testing.T) {
	stored, err := hex.DecodeString("0001B492414EC4300C45AF82BACFD4B193D8EE3958B18B338928EA0C157485C4DD91CA68C414556C18AFFDA5AFFFDE2E8BC658813C39C2622E66AF4E0A37A7E2590483A2C92D2FABE7F2EC34661F33583C126F084EF923BFD5E5617DDCE07CB51707EBED725C4E733F593F8F739DC673751E005CCBD37BED4FDFD1C332B61FB4F703EBB6533774B7C1AB12094261460A4CD4580A4A8120AC069AA504138D9EB378E21A125B6A228A5A14DBD11241B9D24764B868952260B8B8A5CAAC01F615FB7B8EFB35FF475F0340B7B1F39781989C4707E911682018880E817C8A11089FBACFAF0100")
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"v":1,"correlation_id":"f72e0313-32cb-5a19-8c7f-9817882492b8","batch_id":"bench-95a15a0b5d37","submitter":"lazaret bench",` +
		`"object_id":"obj-000000","kind":"tiff","path":"/tmp/lb/pipeline-1000-false/m000000.tif","root":"/tmp/lb/pipeline-1000-false","rel":"m000000.tif",` +
		`"sha256":"604c77234733f78c28c04879b09a8c4b89517a8137e467b6f88929c92fdb630c","size":2270,"dev":65024,"ino":9977940,` +
		`"manifest":{"object_id":"obj-000000","kind":"tiff","path":"m000000.tif","sha256":"604c77234733f78c28c04879b09a8c4b89517a8137e467b6f88929c92fdb630c",` +
		`"format":"image/tiff","color_profile":"sRGB IEC61966-2.1","resolution_dpi":"400"},"attempt":1,"submitted_at":"2026-12-06T03:30:33.431655032Z"}`
	for _, row := range []*premis.Event{{}, masterRow(nil)} {
		if env, err := ledgersql.DecodeEnvelope(stored, row); err != nil || string(env) != want {
			t.Errorf("format 1 read back as %q, %v", env, err)
		}
	}
}

// TestEnvelopeNeedsItsRow: an envelope stored against its row reads as
// another, or not at all, against a row whose columns were changed (which
// the chain shows: it hashes the columns and the envelope alike).
func TestEnvelopeNeedsItsRow(t *testing.T) {
	row := masterRow([]byte(envelope))
	stored, _ := ledgersql.EncodeEnvelope(row)
	other := *row
	other.SHA256 = strings.Repeat("0", 64)
	if back, err := ledgersql.DecodeEnvelope(stored, &other); err == nil && string(back) == envelope {
		t.Error("the envelope read back unchanged against another row's digest: the row is not in its dictionary")
	}
}

// TestEnvelopeRefusesDamage: what the ledger never writes — an unknown
// format, a stream cut short, one that inflates past MaxEnvelope, bytes
// after the stream — is an error, never a guess or an allocation the size of the bomb.
func TestEnvelopeRefusesDamage(t *testing.T) {
	row := masterRow([]byte(envelope))
	stored, _ := ledgersql.EncodeEnvelope(row)
	var bomb bytes.Buffer
	bomb.Write([]byte{0, 1})
	w, _ := flate.NewWriter(&bomb, flate.BestCompression)
	w.Write(bytes.Repeat([]byte{'{'}, ledgersql.MaxEnvelope+10))
	w.Close()
	bomb2 := append([]byte{0, 2}, bomb.Bytes()[2:]...)
	for name, c := range map[string]struct {
		stored []byte
		want   string
	}{
		"unknown format":   {[]byte{0, 9, 1, 2}, "format"},
		"cut short":        {stored[:len(stored)/2], "unexpected EOF"},
		"a bomb":           {bomb.Bytes(), "inflates past"},
		"a bomb, format 2": {bomb2, "inflates past"},
		"no format byte":   {[]byte{0}, "format"},
		"bytes after it":   {append(append([]byte(nil), stored...), "hidden"...), "after the compressed stream"},
	} {
		if _, err := ledgersql.DecodeEnvelope(c.stored, row); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	if _, err := ledgersql.EncodeEnvelope(&premis.Event{Envelope: make([]byte, ledgersql.MaxEnvelope+1)}); err == nil {
		t.Error("an envelope past MaxEnvelope was encoded")
	}
}

// BenchmarkEncodeEnvelope is what storing a master's envelope costs a
// submission or a failure, and reading it back a replay or an export.
func BenchmarkEncodeEnvelope(b *testing.B) {
	row := masterRow([]byte(envelope))
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := ledgersql.EncodeEnvelope(row); err != nil {
				b.Fatal(err)
			}
		}
	})
	stored, _ := ledgersql.EncodeEnvelope(row)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := ledgersql.DecodeEnvelope(stored, row); err != nil {
				b.Fatal(err)
			}
		}
	})
}
