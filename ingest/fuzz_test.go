package ingest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
)

// FuzzDecodeEnvelope: a task payload is attacker bytes (anyone who can
// write to Redis). Whatever they are: a *PoisonError or an envelope that
// encodes and decodes to itself, never a panic.
func FuzzDecodeEnvelope(f *testing.F) {
	good := &Envelope{V: EnvelopeVersion, CorrelationID: "c", BatchID: "b", ObjectID: "o", Kind: "tiff", Path: "/p/o.tif", Root: "/p", Rel: "o.tif",
		SHA256: "s", Attempt: 1}
	b, _ := good.Encode()
	seeds := testenv.NewSeeds(f)
	seeds.Add(b)
	seeds.Add([]byte(`{"v":1,"object_id":`))
	seeds.Add([]byte(`{"v":1,"correlation_id":"c","object_id":"o","kind":"tiff","path":"/x","sha256":"s","attempt":-1}`))
	seeds.Add([]byte(`{"v":1,"correlation_id":"c","object_id":"o","kind":"tiff","path":"/x","sha256":"s","attempt":1,"rel":"../../etc/shadow","root":"/srv"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := DecodeEnvelope(data)
		if err != nil {
			var pe *PoisonError
			if !errors.As(err, &pe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		again, err := env.Encode()
		if err != nil {
			return // valid to read, too large to write back (near the cap): refused, not truncated
		}
		back, err := DecodeEnvelope(again)
		if err != nil || !reflect.DeepEqual(env, back) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, env, back)
		}
	})
}
