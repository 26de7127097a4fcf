package premis_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
)

// The digests of readEvents: what the manifest declared of each file, and
// what Lazaret computed of the one it read.
var (
	declaredSHA = strings.Repeat("ab", 32)
	readSHA     = declaredSHA // the accepted file's bytes hash to what was declared
)

// readEvents are what a worker records, as ingest writes them, for three
// items of one batch: scan-good read, checked and accepted; scan-missing
// never read (its file was not there: io.not-found, retried, then
// dead-lettered), whose event carries the declared digest and size as
// every event of an item does; and scan-unread, whose fixity check failed
// reading (the event of a fixity check, with the declared digest, from no
// bytes). Each was submitted by the Reading Room.
func readEvents() []premis.Event {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	n := 0
	ev := func(t premis.EventType, obj string, dest premis.Destination) premis.Event {
		n++
		env := `{"v":1,"correlation_id":"corr-` + obj + `","object_id":"` + obj + `","kind":"tiff","root":"/staging/b1","rel":"scans/` + obj +
			`.tif","sha256":"` + declaredSHA + `","size":3616,"manifest":{"object_id":"` + obj + `","kind":"tiff","path":"scans/` + obj +
			`.tif","sha256":"` + declaredSHA + `","size":3616}}`
		e := premis.Event{ID: "30000000-0000-4000-8000-0000000000" + string(rune('a'+n/10)) + string(rune('0'+n%10)), Type: t,
			DateTime: at.Add(time.Duration(n) * time.Second), Outcome: premis.Success, ObjectID: obj, BatchID: "b1", CorrelationID: "corr-" + obj,
			Kind: "tiff", SHA256: declaredSHA, Size: 3616, Path: "/staging/b1/scans/" + obj + ".tif", Destination: dest, Attempt: 1, Agent: "lazaret/test"}
		if t == premis.IngestionStart {
			e.Operator, e.Envelope = "Reading Room", []byte(env)
		}
		if e.Outcome = premis.Success; dest == premis.DeadLetter {
			e.Outcome, e.Envelope = premis.Failure, []byte(env)
		}
		return e
	}
	var evs []premis.Event
	evs = append(evs, ev(premis.IngestionStart, "scan-good", premis.Submitted))
	fix := ev(premis.FixityCheck, "scan-good", "")
	fix.SHA256, fix.Note = readSHA, "sha256 "+readSHA
	form := ev(premis.FormatIdentification, "scan-good", "")
	form.PUID = "fmt/353"
	evs = append(evs, fix, form, ev(premis.Validation, "scan-good", ""), ev(premis.Ingestion, "scan-good", premis.Accepted))

	evs = append(evs, ev(premis.IngestionStart, "scan-missing", premis.Submitted))
	missing := ev(premis.Validation, "scan-missing", premis.DeadLetter)
	missing.Class, missing.Code, missing.Retries = premis.Transient, "io.not-found", 3
	missing.Message = "open stage: open /staging/b1/scans/scan-missing.tif: no such file or directory"
	evs = append(evs, missing)

	evs = append(evs, ev(premis.IngestionStart, "scan-unread", premis.Submitted))
	unread := ev(premis.FixityCheck, "scan-unread", premis.DeadLetter)
	unread.Class, unread.Code = premis.Transient, "io.read"
	unread.Message = "fixity stage: read /staging/b1/scans/scan-unread.tif: input/output error"
	return append(evs, unread)
}

// exportedObject is what a test reads of an exported file object.
type exportedObject struct {
	Version        string `xml:"version,attr"`
	SchemaLocation string `xml:"http://www.w3.org/2001/XMLSchema-instance schemaLocation,attr"`
	ID             string `xml:"objectIdentifier>objectIdentifierValue"`
	Significant    []struct {
		Type  string `xml:"significantPropertiesType"`
		Value string `xml:"significantPropertiesValue"`
	} `xml:"significantProperties"`
	Fixity []struct {
		Digest     string `xml:"messageDigest"`
		Originator string `xml:"messageDigestOriginator"`
	} `xml:"objectCharacteristics>fixity"`
	Size string `xml:"objectCharacteristics>size"`
}

func (o exportedObject) declared() map[string]string {
	m := map[string]string{}
	for _, p := range o.Significant {
		m[p.Type] = p.Value
	}
	return m
}

// objectsOf reads every PREMIS object of a document, premis:premis or METS.
func objectsOf(t *testing.T, b []byte) map[string]exportedObject {
	t.Helper()
	objs := map[string]exportedObject{}
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name == (xml.Name{Space: premis.NamespacePREMIS, Local: "object"}) {
			var o exportedObject
			if err := dec.DecodeElement(&o, &se); err != nil {
				t.Fatal(err)
			}
			objs[o.ID] = o
		}
	}
}

// validateWrapped validates each PREMIS entity of a METS document, as the
// document holds it (its own namespaces, schema location and version),
// against premis.xsd, which declares object, event and agent as roots.
func validateWrapped(t *testing.T, mets []byte) {
	t.Helper()
	dir := t.TempDir()
	dec := xml.NewDecoder(bytes.NewReader(mets))
	n := 0
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Space != premis.NamespacePREMIS {
			continue
		}
		if err := dec.Skip(); err != nil {
			t.Fatal(err)
		}
		n++
		path := filepath.Join(dir, fmt.Sprintf("%04d-%s.xml", n, se.Name.Local))
		if err := os.WriteFile(path, mets[off:dec.InputOffset()], 0o644); err != nil {
			t.Fatal(err)
		}
		testenv.ValidatePREMIS(t, path)
	}
	if n == 0 {
		t.Fatal("no PREMIS entity in the METS")
	}
}

// TestExportFixityIsWhatWasRead: an object's fixity and size are what
// Lazaret computed from the bytes it read (a fixity check that passed),
// never what the manifest declared: an item never read, or whose fixity
// check read nothing, exports none, and the manifest's digest and size
// appear as declared significant properties only. In every profile, and
// each document valid.
func TestExportFixityIsWhatWasRead(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  premis.ExportOptions
	}{
		{"premis", premis.ExportOptions{}},
		{"archivematica", premis.ExportOptions{Archivematica: true, Organisation: "Example Archive"}},
		{"mets", premis.ExportOptions{METS: true, Organisation: "Example Archive"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := premis.WriteXMLOptions(&buf, readEvents(), sw, c.opt); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "export.xml")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.opt.METS {
				if fails := testenv.ArchivematicaSchematron(t, path); len(fails) > 0 {
					t.Errorf("%d failed asserts:\n%s", len(fails), strings.Join(fails, "\n"))
				}
				validateWrapped(t, buf.Bytes())
			} else {
				testenv.ValidatePREMIS(t, path)
			}
			objs := objectsOf(t, buf.Bytes())
			good := objs["scan-good"]
			if len(good.Fixity) != 1 || good.Fixity[0].Digest != readSHA || good.Fixity[0].Originator != "lazaret" || good.Size != "3616" {
				t.Errorf("the accepted file: fixity %+v, size %q; want the digest read and 3616", good.Fixity, good.Size)
			}
			for _, id := range []string{"scan-good", "scan-missing", "scan-unread"} {
				o, ok := objs[id]
				if !ok {
					t.Fatalf("no object %s:\n%s", id, buf.String())
				}
				if id != "scan-good" && (len(o.Fixity) > 0 || o.Size != "") {
					t.Errorf("%s was never read, yet exports fixity %+v, size %q", id, o.Fixity, o.Size)
				}
				if d := o.declared(); d["declared sha256"] != declaredSHA || d["declared size"] != "3616" || len(d) != 2 {
					t.Errorf("%s: declared values %v, want the manifest's sha256 and size", id, d)
				}
				if c.opt.METS && (o.Version != "3.0" || !strings.HasPrefix(o.SchemaLocation, premis.NamespacePREMIS+" ")) {
					t.Errorf("%s in METS: version %q, schemaLocation %q", id, o.Version, o.SchemaLocation)
				}
			}
			if n := strings.Count(buf.String(), declaredSHA); n != 5 {
				t.Errorf("the digest appears %d times, want 5 (three declared, one read, and the fixity check's note)", n)
			}
		})
	}
}

// TestExportExtensionsInContainers: every element of Lazaret's namespace
// sits directly inside one of PREMIS's extension containers, where PREMIS
// tools (premisrw) keep what they do not know, in every profile.
func TestExportExtensionsInContainers(t *testing.T) {
	evs := append(sampleEvents(), readEvents()...)
	prev := premis.ChainGenesis
	for i := range evs {
		evs[i].Seq, evs[i].PrevHash = int64(i+1), prev
		evs[i].Hash = premis.ChainHash(prev, &evs[i])
		prev = evs[i].Hash
	}
	head := premis.Head{Count: int64(len(evs)), Hash: prev}
	for _, opt := range []premis.ExportOptions{{Head: &head}, {Head: &head, Archivematica: true}, {Head: &head, METS: true}} {
		var buf bytes.Buffer
		if err := premis.WriteXMLOptions(&buf, evs, sw, opt); err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(&buf)
		var stack []xml.Name
		seen := map[string]bool{}
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				if tok.Name.Space == premis.NamespaceLazaret {
					parent := stack[len(stack)-1]
					seen[tok.Name.Local] = true
					if parent.Space != premis.NamespacePREMIS || !strings.HasSuffix(parent.Local, "Extension") {
						t.Errorf("METS %v: lazaret:%s inside %s:%s, not a PREMIS extension container", opt.METS, tok.Name.Local, parent.Space, parent.Local)
					}
				}
				stack = append(stack, tok.Name)
			case xml.EndElement:
				stack = stack[:len(stack)-1]
			}
		}
		for _, want := range []string{"failure", "chain", "routing", "ledgerHead"} {
			if !seen[want] {
				t.Errorf("METS %v: no lazaret:%s to check", opt.METS, want)
			}
		}
	}
}

// TestMETSForArchivematica: the METS export of a small transfer passes
// Archivematica's METS schematron with no failed assert: eventType labels
// it recognises (the LoC term kept as valueURI), every entity standing
// alone with its schema location, one amdSec per file with its object,
// events and three agents, a fileSec and a structMap of the folders. An
// event type Archivematica does not list (deletion) keeps its label and
// fails that assert alone, as does a file with a fourth agent.
func TestMETSForArchivematica(t *testing.T) {
	evs := metsTransfer()
	doc, path := archivematicaMETS(t, evs)
	for _, want := range []string{
		`<premis:eventType authority="eventType" authorityURI="http://id.loc.gov/vocabulary/preservation/eventType" valueURI="http://id.loc.gov/vocabulary/preservation/eventType/ins">ingestion</premis:eventType>`,
		`valueURI="http://id.loc.gov/vocabulary/preservation/eventType/qua">validation</premis:eventType>`,
		`valueURI="http://id.loc.gov/vocabulary/preservation/eventType/fix">fixity check</premis:eventType>`,
		`<mets:div TYPE="Directory" LABEL="scans"><mets:div TYPE="Item" LABEL="m 1.tif"><mets:fptr FILEID="file-1">`,
		`<mets:FLocat xlink:href="objects/edi/inv.edi" LOCTYPE="OTHER" OTHERLOCTYPE="SYSTEM">`,
		`<mets:metsHdr CREATEDATE="2026-12-01T10:00:00Z">`,
	} {
		if !strings.Contains(doc, strings.ReplaceAll(want, "><", ">\n<")) && !strings.Contains(doc, want) {
			t.Errorf("the METS lacks %s", want)
		}
	}
	if n, want := strings.Count(doc, `MDTYPE="PREMIS:EVENT"`), 7; n != want {
		t.Errorf("%d event digiprovMDs, want %d (the batch's event is not a file's)", n, want)
	}

	// The discard, by a fourth agent: its type is not one Archivematica
	// lists, and the interchange's amdSec has four agents.
	var buf bytes.Buffer
	if err := premis.WriteXMLOptions(&buf, append(evs, transferEvents()[7]), sw, metsOptions); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fails := testenv.ArchivematicaSchematron(t, path)
	t.Logf("with a discard by a fourth agent:\n%s", strings.Join(fails, "\n"))
	if len(fails) != 2 || !strings.Contains(fails[0]+fails[1], "deletion is not in") || !strings.Contains(fails[0]+fails[1], "3 digiprovMD elements") {
		t.Errorf("with a discard by a fourth agent, %d failed asserts, want the eventType's and the agents':\n%s", len(fails), strings.Join(fails, "\n"))
	}
}

// metsOptions export METS for Archivematica.
var metsOptions = premis.ExportOptions{METS: true, Organisation: "Example Archive", Created: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}

// metsTransfer is transferEvents without the discard (see
// TestMETSForArchivematica), with the interchange submitted by the
// operator too: each file's amdSec has the three agents Archivematica's
// schematron asks for.
func metsTransfer() []premis.Event {
	evs := transferEvents()
	evs = evs[:len(evs)-1]
	ins := evs[1]
	ins.ID, ins.ObjectID, ins.Path, ins.Envelope = "20000000-0000-4000-8000-000000000100", "inv", "/staging/b1/edi/inv.edi", []byte(`{"root":"/staging/b1","rel":"edi/inv.edi"}`)
	return append(evs, ins)
}

// archivematicaMETS exports evs as METS (metsOptions) to a file, which it
// checks against Archivematica's schematron and the schemas, and returns
// the document and the file.
func archivematicaMETS(t *testing.T, evs []premis.Event) (doc, path string) {
	t.Helper()
	var buf bytes.Buffer
	if err := premis.WriteXMLOptions(&buf, evs, sw, metsOptions); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "mets.xml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if fails := testenv.ArchivematicaSchematron(t, path); len(fails) > 0 {
		t.Errorf("%d failed asserts:\n%s\n%s", len(fails), strings.Join(fails, "\n"), buf.String())
	}
	validateWrapped(t, buf.Bytes())
	testenv.ValidateMETS(t, path)
	return buf.String(), path
}

// uriPath is a path of RFC 3986's unreserved characters, '/' and escapes.
var uriPath = regexp.MustCompile(`^(?:[A-Za-z0-9._~/-]|%[0-9A-F]{2})*$`)

// TestMETSHrefsAreURIs: a file's FLocat is a URI reference, not a raw
// path: for names with '%', '+', '#', '?', a space and UTF-8 the METS
// validates against mets.xsd (xlink:href is an xs:anyURI), and each href,
// percent-decoded by Python's unquote and unquote_plus (what a consumer's
// code calls) and by Go's, is the file's place in the transfer again.
func TestMETSHrefsAreURIs(t *testing.T) {
	names := []string{"100% done.tif", "a+b.tif", "x#y.tif", "what?.tif", "Zürich/scan 1.tif", "semi;colon&amp.tif"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var evs []premis.Event
	for i, name := range names {
		env, _ := json.Marshal(map[string]string{"root": "/staging/b1", "rel": name})
		evs = append(evs, premis.Event{ID: fmt.Sprintf("30000000-0000-4000-8000-%012d", i), Type: premis.Ingestion, DateTime: at,
			Outcome: premis.Success, ObjectID: fmt.Sprintf("m%d", i), BatchID: "b1", Kind: "tiff", Destination: premis.Accepted,
			Attempt: 1, Agent: "lazaret/test", Operator: "Reading Room", Envelope: env})
	}
	doc, path := archivematicaMETS(t, evs)
	var m struct {
		Files []struct {
			FLocat struct {
				Href string `xml:"href,attr"`
			} `xml:"FLocat"`
		} `xml:"fileSec>fileGrp>file"`
	}
	if err := xml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != len(names) {
		t.Fatalf("%d files in the METS, want %d", len(m.Files), len(names))
	}
	var hrefs []string
	for i, file := range m.Files {
		f := file.FLocat
		want := "objects/" + names[i]
		if got, err := url.PathUnescape(f.Href); err != nil || got != want {
			t.Errorf("href %q decodes to %q (%v), want %q", f.Href, got, err, want)
		}
		if !uriPath.MatchString(f.Href) {
			t.Errorf("href %q holds more than unreserved characters, '/' and escapes", f.Href)
		}
		hrefs = append(hrefs, f.Href)
	}
	py := `import sys, urllib.parse as u
for h in sys.argv[1:]:
    print(u.unquote(h)); print(u.unquote_plus(h))`
	out, err := exec.Command(testenv.SystemPython, append([]string{"-c", py}, hrefs...)...).Output()
	if err != nil {
		if testenv.InCI() {
			t.Fatalf("%s: %v", testenv.SystemPython, err)
		}
		t.Skipf("%s: %v", testenv.SystemPython, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for i, name := range names {
		for j, how := range []string{"unquote", "unquote_plus"} {
			if k := 2*i + j; k >= len(got) || got[k] != "objects/"+name {
				t.Errorf("Python's %s of %q is not %q (%q)", how, hrefs[i], "objects/"+name, got)
			}
		}
	}
	// The same raw path is what mets.xsd refuses: the check is live.
	raw := strings.Replace(doc, `xlink:href="`+hrefs[0]+`"`, `xlink:href="objects/100% done.tif"`, 1)
	if raw == doc {
		t.Fatal("the first href is not in the document as written")
	}
	if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := testenv.CheckMETS(t, path); err == nil || !strings.Contains(err.Error(), "anyURI") {
		t.Errorf("a raw href passes mets.xsd: %v", err)
	}
}

// TestEventJSONNamesDigests: an event's JSON names a digest for what it
// is: computed on the fixity check that computed it, declared as the
// envelope declares it, never a bare sha256 that could be either; the
// item's Fixity gathers both, and an item never read has only the declared.
func TestEventJSONNamesDigests(t *testing.T) {
	evs := readEvents()
	byObject := map[string][]premis.Event{}
	for _, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got["sha256"]; ok {
			t.Errorf("%s %s: a bare sha256: %s", e.ObjectID, e.Type, b)
		}
		if _, ok := got["size"]; ok {
			t.Errorf("%s %s: a bare size: %s", e.ObjectID, e.Type, b)
		}
		_, computed := got["computed_sha256"]
		if want := e.Type == premis.FixityCheck && e.Outcome == premis.Success; computed != want {
			t.Errorf("%s %s %s: computed_sha256 %v, want %v: %s", e.ObjectID, e.Type, e.Outcome, computed, want, b)
		}
		if _, declared := got["declared_sha256"]; declared != (len(e.Envelope) > 0) {
			t.Errorf("%s %s: declared_sha256 %v with an envelope of %d bytes: %s", e.ObjectID, e.Type, declared, len(e.Envelope), b)
		}
		if got["object_id"] != e.ObjectID || got["id"] != e.ID {
			t.Errorf("the other fields are not written as tagged: %s", b)
		}
		byObject[e.ObjectID] = append(byObject[e.ObjectID], e)
	}
	for id, want := range map[string]premis.Fixity{
		"scan-good":    {DeclaredSHA256: declaredSHA, DeclaredSize: 3616, ComputedSHA256: readSHA, ComputedSize: 3616},
		"scan-missing": {DeclaredSHA256: declaredSHA, DeclaredSize: 3616},
		"scan-unread":  {DeclaredSHA256: declaredSHA, DeclaredSize: 3616},
	} {
		if got := premis.FixityOf(byObject[id]); got != want {
			t.Errorf("%s: fixity %+v, want %+v", id, got, want)
		}
	}
}

// TestMETSWithStepsForArchivematica: an accepted master recorded as one
// record with steps (its fixity check, format identification and
// validation, as the worker records it) exports, once expanded, as four
// events that pass Archivematica's METS schematron and the schemas, each
// step naming its record in the chain extension.
func TestMETSWithStepsForArchivematica(t *testing.T) {
	evs := metsTransfer()
	rec := evs[3] // the master's ingestion
	rec.ID = "20000000-0000-4000-8000-000000000200"
	rec.Steps = []premis.Step{
		{Type: premis.FixityCheck, Outcome: premis.Success, Detail: "SHA-256 of the file compared with the manifest", Note: "sha256 " + rec.SHA256},
		{Type: premis.FormatIdentification, Outcome: premis.Success, Detail: "magic bytes, extension and declared format (PRONOM)", Note: "tiff (fmt/353)", PUID: "fmt/353"},
		{Type: premis.Validation, Outcome: premis.Success, Detail: "TIFF structure of every IFD and pixel data of every page", Note: "1 page(s)", PUID: "fmt/353"},
	}
	rec.Seq, rec.Hash, rec.PrevHash = 4, strings.Repeat("c", 64), strings.Repeat("b", 64)
	// The record and its steps in place of the fixity check and ingestion.
	out := append(append(slices.Clone(evs[:2]), rec.Expand()...), evs[4:]...)
	if n := len(out); n != 10 {
		t.Fatalf("%d events after expanding the record, want 10", n)
	}
	doc, _ := archivematicaMETS(t, out)
	if n, want := strings.Count(doc, `MDTYPE="PREMIS:EVENT"`), 9; n != want {
		t.Errorf("%d event digiprovMDs, want %d (three steps and their record among them)", n, want)
	}
	for i := 1; i <= 3; i++ {
		id := premis.StepID(rec.ID, i)
		if !strings.Contains(doc, ">"+id+"<") {
			t.Errorf("the METS lacks step %d's event %s", i, id)
		}
	}
	if n := strings.Count(doc, `record="`+rec.ID+`"`); n != 3 {
		t.Errorf("%d chain extensions name the record, want its 3 steps:\n%s", n, doc)
	}
}
