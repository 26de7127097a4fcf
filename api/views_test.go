package api_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// TestDetailNamesDigests: a failure's detail says what the manifest
// declared and what Lazaret computed, each named so; an item whose file was
// never read (io.not-found) has no computed digest, and no bare sha256
// anywhere in the JSON passes the declared one off as read.
func TestDetailNamesDigests(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	env := []byte(`{"v":1,"object_id":"scan-9","sha256":"` + sha + `","size":4096,"manifest":{"object_id":"scan-9","sha256":"` + sha + `","size":4096}}`)
	ins := premis.Event{ID: "e1", Type: premis.IngestionStart, Outcome: premis.Success, ObjectID: "scan-9", CorrelationID: "c9",
		SHA256: sha, Size: 4096, Destination: premis.Submitted, Envelope: env}
	missing := premis.Event{ID: "e2", Type: premis.Validation, Outcome: premis.Failure, ObjectID: "scan-9", CorrelationID: "c9",
		Class: premis.Transient, Code: "io.not-found", Destination: premis.DeadLetter, SHA256: sha, Size: 4096, Envelope: env}
	d := api.Detail(nil, ingest.Failure{Event: missing}, []premis.Event{ins, missing}, nil)
	if want := (premis.Fixity{DeclaredSHA256: sha, DeclaredSize: 4096}); d.Fixity != want {
		t.Errorf("fixity %+v, want %+v", d.Fixity, want)
	}
	var buf bytes.Buffer
	if err := api.EncodeJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	if strings.Contains(got, `"sha256"`) || strings.Contains(got, `"computed_sha256"`) || !strings.Contains(got, `"fixity":{"declared_sha256":"`+sha+`","declared_size":4096}`) {
		t.Errorf("the detail's JSON:\n%s", got)
	}
}
