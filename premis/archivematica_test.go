package premis_test

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
)

// amDoc is what Archivematica's importer of a transfer's
// metadata/premis.xml reads (docs/archivematica.md): the root's version,
// objects by their literal xsi:type, the first identifier of each object,
// event and agent, and the links between them in both directions.
type amDoc struct {
	XMLName xml.Name `xml:"http://www.loc.gov/premis/v3 premis"`
	Version string   `xml:"version,attr"`
	Objects []struct {
		Type         string    `xml:"http://www.w3.org/2001/XMLSchema-instance type,attr"`
		IDs          []amIdent `xml:"objectIdentifier"`
		OriginalName string    `xml:"originalName"`
		Events       []amLink  `xml:"linkingEventIdentifier"`
	} `xml:"object"`
	Events []struct {
		IDs      []amEventID `xml:"eventIdentifier"`
		Type     string      `xml:"eventType"`
		DateTime string      `xml:"eventDateTime"`
		Objects  []amLink    `xml:"linkingObjectIdentifier"`
		Agents   []amLink    `xml:"linkingAgentIdentifier"`
	} `xml:"event"`
	Agents []struct {
		IDs    []amAgentID `xml:"agentIdentifier"`
		Name   []string    `xml:"agentName"`
		Type   string      `xml:"agentType"`
		Events []amLink    `xml:"linkingEventIdentifier"`
	} `xml:"agent"`
}

type amIdent struct {
	Type  string `xml:"objectIdentifierType"`
	Value string `xml:"objectIdentifierValue"`
}
type amEventID struct {
	Type  string `xml:"eventIdentifierType"`
	Value string `xml:"eventIdentifierValue"`
}
type amAgentID struct {
	Type  string `xml:"agentIdentifierType"`
	Value string `xml:"agentIdentifierValue"`
}

// amLink is any of the linking elements: its type and value children.
type amLink struct {
	Fields []struct {
		XMLName xml.Name
		Text    string `xml:",chardata"`
	} `xml:",any"`
}

func (l amLink) pair() [2]string {
	var p [2]string
	for _, f := range l.Fields {
		switch {
		case strings.HasSuffix(f.XMLName.Local, "IdentifierType"):
			p[0] = f.Text
		case strings.HasSuffix(f.XMLName.Local, "IdentifierValue"):
			p[1] = f.Text
		}
	}
	return p
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// archivematicaImport applies the importer's checks to doc against the
// files of a transfer (their paths below the transfer root, objects/...),
// and returns every reason it would fail the job, or nothing.
func archivematicaImport(t *testing.T, doc []byte, files map[string]bool) []string {
	t.Helper()
	var d amDoc
	if err := xml.Unmarshal(doc, &d); err != nil {
		return []string{"not a premis document: " + err.Error()}
	}
	var fails []string
	if d.Version != "3.0" {
		fails = append(fails, "premis version "+d.Version)
	}
	objects := map[[2]string]bool{}
	for _, o := range d.Objects {
		if o.Type != "premis:file" || len(o.IDs) == 0 {
			continue // representations, bitstreams, entities: ignored
		}
		key := [2]string{o.IDs[0].Type, o.IDs[0].Value}
		name := strings.TrimSpace(o.OriginalName)
		if !files[name] {
			fails = append(fails, "object "+key[1]+": originalName "+name+" matches no transfer file")
			continue
		}
		objects[key] = true
	}
	events := map[[2]string]bool{}
	eventObjects := map[[2]string]int{}
	eventAgents := map[[2]string]int{}
	for _, e := range d.Events {
		if len(e.IDs) == 0 {
			fails = append(fails, "event without identifier")
			continue
		}
		key := [2]string{e.IDs[0].Type, e.IDs[0].Value}
		events[key] = true
		if !uuidRE.MatchString(key[1]) {
			fails = append(fails, "event "+key[1]+": not a UUID (Archivematica would assign another)")
		}
		if _, err := time.Parse(time.RFC3339Nano, e.DateTime); err != nil {
			fails = append(fails, "event "+key[1]+": eventDateTime "+e.DateTime)
		}
		eventObjects[key] += len(e.Objects)
		eventAgents[key] += len(e.Agents)
		for _, l := range e.Objects {
			if !objects[l.pair()] {
				fails = append(fails, "event "+key[1]+" links object "+l.pair()[1]+", not a file object of the transfer")
			}
		}
	}
	agents := map[[2]string]bool{}
	for _, a := range d.Agents {
		if len(a.IDs) == 0 || len(a.Name) == 0 || a.Type == "" {
			fails = append(fails, "agent without identifier, name or type")
			continue
		}
		agents[[2]string{a.IDs[0].Type, a.IDs[0].Value}] = true
	}
	linkedAgents := map[[2]string]bool{}
	for _, e := range d.Events {
		key := [2]string{e.IDs[0].Type, e.IDs[0].Value}
		for _, l := range e.Agents {
			if !agents[l.pair()] {
				fails = append(fails, "event "+key[1]+" links agent "+l.pair()[1]+", not in the document")
			}
			linkedAgents[l.pair()] = true
		}
		if eventObjects[key] == 0 {
			fails = append(fails, "event "+key[1]+" links no object")
		}
		if eventAgents[key] == 0 {
			fails = append(fails, "event "+key[1]+" links no agent")
		}
	}
	linkedObjects := map[[2]string]bool{}
	for _, e := range d.Events {
		for _, l := range e.Objects {
			linkedObjects[l.pair()] = true
		}
	}
	for _, o := range d.Objects {
		if o.Type != "premis:file" || len(o.IDs) == 0 {
			continue
		}
		key := [2]string{o.IDs[0].Type, o.IDs[0].Value}
		for _, l := range o.Events {
			if !events[l.pair()] {
				fails = append(fails, "object "+key[1]+" links event "+l.pair()[1]+", not in the document")
			}
			linkedObjects[key] = true
		}
		if objects[key] && !linkedObjects[key] {
			fails = append(fails, "object "+key[1]+" is linked to no event")
		}
	}
	for a := range agents {
		if !linkedAgents[a] {
			fails = append(fails, "agent "+a[1]+" is linked to no event")
		}
	}
	return fails
}

// transferEvents is what a worker and an operator record for a small
// batch: a batch fact, a master submitted and accepted, an interchange
// with one accepted message and one quarantined then discarded.
func transferEvents() []premis.Event {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	sha := strings.Repeat("ab", 32)
	n := 0
	ev := func(t premis.EventType, obj, kind string, dest premis.Destination) premis.Event {
		n++
		return premis.Event{ID: "20000000-0000-4000-8000-0000000000" + string(rune('a'+n/10)) + string(rune('0'+n%10)), Type: t, DateTime: at.Add(time.Duration(n) * time.Second),
			Outcome: premis.Success, ObjectID: obj, BatchID: "b1", Kind: kind, SHA256: sha, Destination: dest, Attempt: 1, Agent: "lazaret/test"}
	}
	batch := ev(premis.IngestionStart, "b1", "batch", "")
	batch.Operator = "Reading Room"
	ins := ev(premis.IngestionStart, "master-1", "tiff", premis.Submitted)
	ins.Path, ins.Envelope, ins.Operator = "/staging/b1/scans/m 1.tif", []byte(`{"root":"/staging/b1","rel":"scans/m 1.tif"}`), "Reading Room"
	fix := ev(premis.FixityCheck, "master-1", "tiff", "")
	ing := ev(premis.Ingestion, "master-1", "tiff", premis.Accepted)
	ing.PUID = "fmt/353"
	ic := ev(premis.Ingestion, "inv", "edifact", premis.Accepted)
	ic.Envelope = []byte(`{"root":"/staging/b1","rel":"edi/inv.edi"}`)
	msg := ev(premis.Ingestion, "inv#M1", "edifact", premis.Accepted)
	bad := ev(premis.Quarantine, "inv#M2", "edifact", premis.Quarantined)
	bad.Outcome, bad.Class, bad.Code, bad.Message = premis.Failure, premis.Semantic, "edifact.locode", "UN/LOCODE XXABC unknown"
	del := ev(premis.Deletion, "inv#M2", "edifact", premis.Discarded)
	del.Operator = "ana"
	return []premis.Event{batch, ins, fix, ing, ic, msg, bad, del}
}

// TestArchivematicaImport: an export for Archivematica passes every check
// its premis.xml importer makes against the transfer's files, and the
// default export would not (its originalName is not the file's place in a
// transfer, and its messages are bitstreams the importer cannot link).
func TestArchivematicaImport(t *testing.T) {
	files := map[string]bool{"objects/scans/m 1.tif": true, "objects/edi/inv.edi": true}
	var buf bytes.Buffer
	if err := premis.WriteXMLOptions(&buf, transferEvents(), sw, premis.ExportOptions{Organisation: "Example Archive", Archivematica: true}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "premis.xml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.ValidatePREMIS(t, path)
	if fails := archivematicaImport(t, buf.Bytes(), files); len(fails) > 0 {
		t.Errorf("Archivematica would refuse the export:\n%s\n%s", strings.Join(fails, "\n"), buf.String())
	}
	buf.Reset()
	if err := premis.WriteXMLOptions(&buf, transferEvents(), sw, premis.ExportOptions{Organisation: "Example Archive"}); err != nil {
		t.Fatal(err)
	}
	fails := archivematicaImport(t, buf.Bytes(), files)
	if len(fails) == 0 {
		t.Error("the checker finds nothing wrong with the default export: it checks too little")
	}
	t.Logf("the default export, as Archivematica would see it:\n%s", strings.Join(fails, "\n"))
}
