package premis_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
)

var sw = premis.Software{Name: "lazaret", Version: "test"}

func sampleEvents() []premis.Event {
	off, page := int64(2916), 3
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var evs []premis.Event
	for i, t := range premis.EventTypes() {
		e := premis.Event{ID: "00000000-0000-4000-8000-00000000000" + string(rune('0'+i)), Type: t, DateTime: at,
			Outcome: premis.Success, ObjectID: "master-1", BatchID: "b1", SHA256: strings.Repeat("ab", 32), Size: 2930, PUID: "fmt/353",
			Path: "/data/masters/m1.tif", Attempt: 1, Detail: "ran <checks> & more"}
		if t == premis.Quarantine {
			e.Outcome, e.Class, e.Code, e.Offset, e.Page, e.Destination = premis.Failure, premis.Structural, "tiff.ifd-outside-file", &off, &page, premis.DeadLetter
			e.Message = "tiff: page 3 at byte 2916: offset outside file \x01 control"
		}
		if t == premis.Deletion {
			e.Operator, e.Note = "archivist ana", "discarded: duplicate scan"
		}
		evs = append(evs, e)
	}
	// A second object with no format identified.
	evs = append(evs, premis.Event{ID: "00000000-0000-4000-8000-0000000000ff", Type: premis.Validation, DateTime: at,
		Outcome: premis.Failure, Class: premis.Structural, Code: "task.undecodable", ObjectID: "ing-123", Destination: premis.DeadLetter})
	return evs
}

func TestWriteXMLValidatesAgainstPREMISSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "premis.xml")
	var buf bytes.Buffer
	if err := premis.WriteXML(&buf, sampleEvents(), sw); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.ValidatePREMIS(t, path)
	for _, want := range []string{
		`valueURI="http://id.loc.gov/vocabulary/preservation/eventType/qua"`,
		`<premis:formatRegistryKey>fmt/353</premis:formatRegistryKey>`,
		`offset="2916"`, `page="3"`, `class="structural"`,
		`<premis:agentIdentifierValue>archivist ana</premis:agentIdentifierValue>`,
		`ran &lt;checks&gt; &amp; more`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("export lacks %s", want)
		}
	}
}

// TestWriteXMLWithChain: events read from a ledger carry their chain
// fields, and the export can carry the head; the document stays valid.
func TestWriteXMLWithChain(t *testing.T) {
	evs := sampleEvents()
	prev := premis.ChainGenesis
	for i := range evs {
		evs[i].Seq, evs[i].PrevHash = int64(i+1), prev
		evs[i].Hash = premis.ChainHash(prev, &evs[i])
		prev = evs[i].Hash
	}
	head := premis.Head{Count: int64(len(evs)), Hash: prev}
	path := filepath.Join(t.TempDir(), "premis.xml")
	var buf bytes.Buffer
	if err := premis.WriteXMLWithHead(&buf, evs, sw, head); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.ValidatePREMIS(t, path)
	for _, want := range []string{
		`<lazaret:chain seq="1" prevHash="` + premis.ChainGenesis + `" hash="` + evs[0].Hash + `">`,
		`<lazaret:chain seq="2" prevHash="` + evs[0].Hash + `" hash="` + evs[1].Hash + `">`,
		`<premis:agentNote>ledger chain head: 9 events, last hash ` + head.Hash + `</premis:agentNote>`,
		`<lazaret:ledgerHead events="9" hash="` + head.Hash + `">`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("export lacks %s", want)
		}
	}
}

func TestWriteXMLRefusesNothing(t *testing.T) {
	if err := premis.WriteXML(&bytes.Buffer{}, nil, sw); err == nil {
		t.Fatal("an export of no events must say so, not write an invalid document")
	}
}

func TestEventKeyIsContentAddressed(t *testing.T) {
	a := premis.EventKey("c", "s", premis.Validation, 1)
	if a != premis.EventKey("c", "s", premis.Validation, 1) {
		t.Fatal("same inputs, different keys")
	}
	for _, other := range []string{
		premis.EventKey("c2", "s", premis.Validation, 1), premis.EventKey("c", "s2", premis.Validation, 1),
		premis.EventKey("c", "s", premis.Quarantine, 1), premis.EventKey("c", "s", premis.Validation, 2),
		premis.EventKey("cs", "", premis.Validation, 1),
	} {
		if other == a {
			t.Errorf("distinct inputs collide on %s", a)
		}
	}
}
