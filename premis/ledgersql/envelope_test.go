package ledgersql_test

import (
	"bytes"
	"compress/flate"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/premis/ledgersql"
)

// envelope is one the worker writes for a master, as submit builds it.
const envelope = `{"v":1,"correlation_id":"394d6769-a3d3-53ff-9706-2e0d2cfbdd6d","batch_id":"bench-ab0fa63c3dd7","submitter":"lazaret bench",` +
	`"object_id":"obj-000004","kind":"tiff","path":"/srv/ingest/b/m000004.tif","root":"/srv/ingest/b","rel":"m000004.tif",` +
	`"sha256":"886ae61e7391d1ae788a4aed7938bbf951ee675e61702c2125400d8c9224e101","size":2558,"dev":65024,"ino":9986568,` +
	`"manifest":{"object_id":"obj-000004","kind":"tiff","path":"m000004.tif","sha256":"886ae61e7391d1ae788a4aed7938bbf951ee675e61702c2125400d8c9224e101",` +
	`"format":"image/tiff","color_profile":"sRGB IEC61966-2.1","resolution_dpi":"400"},"attempt":1,"submitted_at":"2026-12-03T09:15:21.410606803Z"}`

// TestEnvelopeRoundTrips: an envelope comes back byte for byte, stored
// compressed when that is shorter (a worker's is, to under half), as it
// is when not (and as every row of before holds it); one that begins
// with byte 0 is never stored as it is, since it would read as
// compressed.
func TestEnvelopeRoundTrips(t *testing.T) {
	for _, env := range [][]byte{nil, []byte(`{"v":1}`), []byte(envelope), {0, 1, 2}, {0}, bytes.Repeat([]byte("ab"), 4000)} {
		stored, err := ledgersql.EncodeEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ledgersql.DecodeEnvelope(stored)
		if err != nil || !bytes.Equal(back, env) {
			t.Errorf("%.20q: stored as %d bytes, read back %.20q, %v", env, len(stored), back, err)
		}
		if len(env) > 0 && env[0] == 0 && bytes.Equal(stored, env) {
			t.Errorf("%q is stored as it is", env)
		}
	}
	stored, _ := ledgersql.EncodeEnvelope([]byte(envelope))
	t.Logf("a master's envelope: %d bytes, stored in %d", len(envelope), len(stored))
	if len(stored) > len(envelope)/2 {
		t.Errorf("a master's envelope of %d bytes is stored in %d, want at most half", len(envelope), len(stored))
	}
	if small, _ := ledgersql.EncodeEnvelope([]byte(`{"v":1}`)); string(small) != `{"v":1}` {
		t.Errorf("a short envelope is stored as %q, which is longer", small)
	}
}

// TestEnvelopeRefusesDamage: what the ledger never writes — an unknown
// format, a stream cut short, one that inflates past MaxEnvelope — is an
// error, never a guess or an allocation the size of the bomb.
func TestEnvelopeRefusesDamage(t *testing.T) {
	stored, _ := ledgersql.EncodeEnvelope([]byte(envelope))
	var bomb bytes.Buffer
	bomb.Write([]byte{0, 1})
	w, _ := flate.NewWriter(&bomb, flate.BestCompression)
	w.Write(bytes.Repeat([]byte{'{'}, ledgersql.MaxEnvelope+10))
	w.Close()
	for name, c := range map[string]struct {
		stored []byte
		want   string
	}{
		"unknown format": {[]byte{0, 9, 1, 2}, "format"},
		"cut short":      {stored[:len(stored)/2], "unexpected EOF"},
		"a bomb":         {bomb.Bytes(), "inflates past"},
		"no format byte": {[]byte{0}, "format"},
	} {
		if _, err := ledgersql.DecodeEnvelope(c.stored); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	if _, err := ledgersql.EncodeEnvelope(make([]byte, ledgersql.MaxEnvelope+1)); err == nil {
		t.Error("an envelope past MaxEnvelope was encoded")
	}
}

// BenchmarkEncodeEnvelope is what storing a master's envelope costs a
// submission or a failure, and reading it back a replay or an export.
func BenchmarkEncodeEnvelope(b *testing.B) {
	env := []byte(envelope)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := ledgersql.EncodeEnvelope(env); err != nil {
				b.Fatal(err)
			}
		}
	})
	stored, _ := ledgersql.EncodeEnvelope(env)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := ledgersql.DecodeEnvelope(stored); err != nil {
				b.Fatal(err)
			}
		}
	})
}
