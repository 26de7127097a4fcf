package premis_test

import (
	"bytes"
	"encoding/xml"
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
	if err := premis.WriteXMLOptions(&buf, evs, sw, premis.ExportOptions{Head: &head}); err != nil {
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

// TestWriteXMLUnverified: an export of a ledger that did not verify says
// so before its root and on the exporting agent, and stays valid.
func TestWriteXMLUnverified(t *testing.T) {
	evs := sampleEvents()
	head := premis.Head{Count: 9, Hash: premis.ChainGenesis}
	problem := "link: seq 2 (event e-2): the row was changed -- after it was written <&>"
	var buf bytes.Buffer
	if err := premis.WriteXMLOptions(&buf, evs, sw, premis.ExportOptions{Head: &head, Unverified: problem}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "premis.xml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.ValidatePREMIS(t, path)
	for _, want := range []string{
		"<!-- UNVERIFIED EXPORT: the ledger did not verify: link: seq 2 (event e-2): the row was changed - - after it was written <&> -->",
		`<premis:agentNote>UNVERIFIED: the ledger did not verify when this was exported: link: seq 2 (event e-2): the row was changed -- after it was written &lt;&amp;&gt;</premis:agentNote>`,
		`<lazaret:ledgerHead events="9" hash="` + head.Hash + `" verified="false" problem="link: seq 2`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("export lacks %s", want)
		}
	}
}

// TestWriteMETSUnverified: the METS wrapper carries the same marks, and
// each PREMIS entity in it stays valid.
func TestWriteMETSUnverified(t *testing.T) {
	head := premis.Head{Count: 9, Hash: premis.ChainGenesis}
	var buf bytes.Buffer
	if err := premis.WriteXMLOptions(&buf, transferEvents(), sw, premis.ExportOptions{METS: true, Head: &head, Unverified: "truncated: 3 events stored"}); err != nil {
		t.Fatal(err)
	}
	validateWrapped(t, buf.Bytes())
	for _, want := range []string{"<!-- UNVERIFIED EXPORT: the ledger did not verify: truncated: 3 events stored -->", `verified="false"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the METS export lacks %s", want)
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

// TestWriteXMLForImport reads an export back as a preservation system
// importing it would: file objects with their format named and their
// originalName below the batch folder, a message of an interchange as a
// bitstream included in the interchange's file, the organisation as an
// agent every event links, authorities on agent types and digests, and no
// failure element on events that did not fail.
func TestWriteXMLForImport(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	sha := strings.Repeat("cd", 32)
	evs := []premis.Event{
		{ID: "10000000-0000-4000-8000-000000000001", Type: premis.IngestionStart, DateTime: at, Outcome: premis.Success, ObjectID: "master-1",
			BatchID: "b1", Kind: "tiff", SHA256: sha, Size: 4096, Path: "/staging/b1/masters/m1.tif", Destination: premis.Submitted, Attempt: 1,
			Operator: "Reading Room Scans", Envelope: []byte(`{"v":1,"root":"/staging/b1","rel":"masters/m1.tif","manifest":{"sha256":"` + sha + `","size":4096}}`)},
		{ID: "10000000-0000-4000-8000-000000000005", Type: premis.FixityCheck, DateTime: at, Outcome: premis.Success, ObjectID: "master-1",
			BatchID: "b1", Kind: "tiff", SHA256: sha, Size: 4096, Path: "/staging/b1/masters/m1.tif", Attempt: 1},
		{ID: "10000000-0000-4000-8000-000000000002", Type: premis.Ingestion, DateTime: at, Outcome: premis.Success, ObjectID: "master-1",
			BatchID: "b1", Kind: "tiff", SHA256: sha, PUID: "fmt/353", Path: "/staging/b1/masters/m1.tif", Destination: premis.Accepted, Attempt: 1},
		{ID: "10000000-0000-4000-8000-000000000003", Type: premis.Ingestion, DateTime: at, Outcome: premis.Success, ObjectID: "inv",
			BatchID: "b1", Kind: "edifact", SHA256: sha, Path: "/staging/b1/edi/inv.edi", Destination: premis.Accepted, Attempt: 1},
		{ID: "10000000-0000-4000-8000-000000000004", Type: premis.Ingestion, DateTime: at, Outcome: premis.Success, ObjectID: "inv#MSG1",
			BatchID: "b1", Kind: "edifact", Destination: premis.Accepted, Attempt: 1},
	}
	var buf bytes.Buffer
	if err := premis.WriteXMLOptions(&buf, evs, sw, premis.ExportOptions{Organisation: "Example Archive"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "premis.xml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.ValidatePREMIS(t, path)

	type ident struct {
		Type  string `xml:"objectIdentifierType"`
		Value string `xml:"objectIdentifierValue"`
	}
	var doc struct {
		Objects []struct {
			XSIType string `xml:"http://www.w3.org/2001/XMLSchema-instance type,attr"`
			ID      ident  `xml:"objectIdentifier"`
			Format  struct {
				Name     string `xml:"formatDesignation>formatName"`
				Registry string `xml:"formatRegistry>formatRegistryKey"`
			} `xml:"objectCharacteristics>format"`
			Digest struct {
				Authority string `xml:"valueURI,attr"`
			} `xml:"objectCharacteristics>fixity>messageDigestAlgorithm"`
			OriginalName string `xml:"originalName"`
			Related      string `xml:"relationship>relatedObjectIdentifier>relatedObjectIdentifierValue"`
		} `xml:"object"`
		Events []struct {
			ID      string   `xml:"eventIdentifier>eventIdentifierValue"`
			Agents  []string `xml:"linkingAgentIdentifier>linkingAgentIdentifierValue"`
			Failure []string `xml:"eventOutcomeInformation>eventOutcomeDetail>eventOutcomeDetailExtension>failure"`
		} `xml:"event"`
		Agents []struct {
			Value string `xml:"agentIdentifier>agentIdentifierValue"`
			Type  struct {
				Text string `xml:",chardata"`
				URI  string `xml:"valueURI,attr"`
			} `xml:"agentType"`
		} `xml:"agent"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Objects) != 3 {
		t.Fatalf("%d objects, want 3", len(doc.Objects))
	}
	m, ic, msg := doc.Objects[0], doc.Objects[1], doc.Objects[2]
	if m.XSIType != "premis:file" || m.OriginalName != "masters/m1.tif" || m.Format.Name != "Tagged Image File Format" || m.Format.Registry != "fmt/353" ||
		m.Digest.Authority != "http://id.loc.gov/vocabulary/preservation/cryptographicHashFunctions/sha256" {
		t.Errorf("master object: %+v", m)
	}
	if ic.XSIType != "premis:file" || ic.OriginalName != "/staging/b1/edi/inv.edi" || ic.Format.Name != "UN/EDIFACT interchange" {
		t.Errorf("interchange object (no envelope recorded: the stored path stands): %+v", ic)
	}
	if msg.XSIType != "premis:bitstream" || msg.ID.Value != "inv#MSG1" || msg.Related != "inv" || msg.OriginalName != "" || msg.Format.Name != "UN/EDIFACT message" {
		t.Errorf("message object: %+v", msg)
	}
	for _, e := range doc.Events {
		if len(e.Failure) > 0 {
			t.Errorf("event %s succeeded but carries a failure element", e.ID)
		}
		if len(e.Agents) < 2 || e.Agents[len(e.Agents)-1] != "Example Archive" {
			t.Errorf("event %s links agents %v, want the organisation last", e.ID, e.Agents)
		}
	}
	types := map[string]string{}
	for _, a := range doc.Agents {
		types[a.Value] = a.Type.Text + " " + a.Type.URI
	}
	for who, want := range map[string]string{
		sw.ID():              "software http://id.loc.gov/vocabulary/preservation/agentType/sof",
		"Example Archive":    "organization http://id.loc.gov/vocabulary/preservation/agentType/org",
		"Reading Room Scans": "person http://id.loc.gov/vocabulary/preservation/agentType/per",
	} {
		if types[who] != want {
			t.Errorf("agent %s: %q, want %q", who, types[who], want)
		}
	}
}

// TestWriteXMLLinksMembers: an event that holds the accepted messages of a
// chunk as members links each of them, not the interchange it is filed
// under; each is a bitstream object included in the interchange and links
// back to the event; and for Archivematica, which links events to files
// only, the event links the interchange's file.
func TestWriteXMLLinksMembers(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	evs := []premis.Event{
		{ID: "20000000-0000-4000-8000-000000000001", Type: premis.FixityCheck, DateTime: at, Outcome: premis.Success, ObjectID: "inv",
			BatchID: "b1", Kind: "edifact", SHA256: strings.Repeat("cd", 32), Path: "/staging/b1/inv.edi", Attempt: 1},
		{ID: "20000000-0000-4000-8000-000000000002", Type: premis.Ingestion, DateTime: at, Outcome: premis.Success, ObjectID: "inv",
			BatchID: "b1", Kind: "edifact", Attempt: 1, Members: []premis.Member{{ObjectID: "inv#1", Number: 1, Offset: 120, Type: "IFTMIN"},
				{ObjectID: "inv#2", Number: 2, Offset: 560, Type: "IFTMIN"}}},
	}
	type doc struct {
		Objects []struct {
			XSIType string   `xml:"http://www.w3.org/2001/XMLSchema-instance type,attr"`
			ID      string   `xml:"objectIdentifier>objectIdentifierValue"`
			Related string   `xml:"relationship>relatedObjectIdentifier>relatedObjectIdentifierValue"`
			Events  []string `xml:"linkingEventIdentifier>linkingEventIdentifierValue"`
		} `xml:"object"`
		Events []struct {
			ID      string   `xml:"eventIdentifier>eventIdentifierValue"`
			Objects []string `xml:"linkingObjectIdentifier>linkingObjectIdentifierValue"`
		} `xml:"event"`
	}
	read := func(opt premis.ExportOptions) doc {
		t.Helper()
		var buf bytes.Buffer
		if err := premis.WriteXMLOptions(&buf, evs, sw, opt); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "premis.xml")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		testenv.ValidatePREMIS(t, path)
		var d doc
		if err := xml.Unmarshal(buf.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := read(premis.ExportOptions{})
	if len(d.Objects) != 3 {
		t.Fatalf("%d objects, want the interchange and its two messages", len(d.Objects))
	}
	for i, want := range []string{"inv", "inv#1", "inv#2"} {
		o := d.Objects[i]
		if o.ID != want {
			t.Fatalf("object %d is %s, want %s", i, o.ID, want)
		}
		wantEvents, wantType, wantRelated := evs[1].ID, "premis:bitstream", "inv"
		if i == 0 {
			wantEvents, wantType, wantRelated = evs[0].ID, "premis:file", ""
		}
		if strings.Join(o.Events, " ") != wantEvents || o.XSIType != wantType || o.Related != wantRelated {
			t.Errorf("object %s: %s, related %q, events %v", o.ID, o.XSIType, o.Related, o.Events)
		}
	}
	if got := strings.Join(d.Events[1].Objects, " "); got != "inv#1 inv#2" {
		t.Errorf("the chunk's ing event links %q, want its members", got)
	}
	d = read(premis.ExportOptions{Archivematica: true})
	if len(d.Objects) != 1 || strings.Join(d.Events[1].Objects, " ") != "inv" {
		t.Errorf("Archivematica: %d objects, the chunk's event links %v, want the interchange's file alone", len(d.Objects), d.Events[1].Objects)
	}
}

// TestOriginalNameSurvivesAFileReplay: an item replayed with a corrected
// file elsewhere keeps its name in the batch. Before, the replay's
// envelope (the file's path beneath its own folder) renamed it:
// masters/trunc.tif became trunc.tif.
func TestOriginalNameSurvivesAFileReplay(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ev := func(id string, typ premis.EventType, rel, path string) premis.Event {
		return premis.Event{ID: id, Type: typ, DateTime: at, Outcome: premis.Success, ObjectID: "trunc", BatchID: "b", Kind: "tiff", Path: path,
			Envelope: []byte(`{"rel":"` + rel + `","manifest":{"object_id":"trunc","path":"masters/trunc.tif"}}`)}
	}
	events := []premis.Event{
		ev("01a00000-0000-7000-8000-000000000001", premis.IngestionStart, "masters/trunc.tif", "/in/b/masters/trunc.tif"),
		ev("01a00000-0000-7000-8000-000000000002", premis.IngestionStart, "trunc.tif", "/fixed/trunc.tif"),
		ev("01a00000-0000-7000-8000-000000000003", premis.Ingestion, "trunc.tif", "/fixed/trunc.tif"),
	}
	for _, opt := range []premis.ExportOptions{{}, {Archivematica: true}} {
		var b bytes.Buffer
		if err := premis.WriteXMLOptions(&b, events, premis.Software{Name: "lazaret", Version: "t"}, opt); err != nil {
			t.Fatal(err)
		}
		want := "<premis:originalName>masters/trunc.tif</premis:originalName>"
		if opt.Archivematica {
			want = "<premis:originalName>objects/masters/trunc.tif</premis:originalName>"
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("archivematica %v: want %s in\n%s", opt.Archivematica, want, b.String())
		}
	}
}
