package premis

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Namespaces written by WriteXML.
const (
	NamespacePREMIS  = "http://www.loc.gov/premis/v3"
	NamespaceLazaret = "https://lazaret.dev/ns/premis-extension/1"
	namespaceXSI     = "http://www.w3.org/2001/XMLSchema-instance"
)

// Software is the software agent written into exports and events.
type Software struct {
	Name    string // "lazaret"
	Version string
}

// ID is the agent identifier value, e.g. "lazaret/0.1.0".
func (s Software) ID() string { return s.Name + "/" + s.Version }

// WriteXML writes a premis:premis document (PREMIS 3.0) for events: one file
// object per object id (with its last known digest, size and PRONOM format),
// every event in ledger order, and the agents they name (the software and each
// operator). Failure positions go into eventOutcomeDetailExtension as a
// lazaret:failure element. An event read from a ledger carries its place in
// the hash chain as a lazaret:chain element (seq, prevHash, hash) in a
// second eventDetailInformation's eventDetailExtension. The document
// validates against premis.xsd v3.0.
func WriteXML(w io.Writer, events []Event, sw Software) error {
	return WriteXMLOptions(w, events, sw, ExportOptions{})
}

// WriteXMLWithHead is WriteXML, with the ledger's chain head at export time
// recorded on the software agent that exports: an agentNote ("ledger chain
// head: N events, last hash H") and a lazaret:ledgerHead element (events,
// hash) in an agentExtension. Passed back to lazaret ledger verify --anchor
// (as N:H), it shows whether the history exported was rewritten since.
func WriteXMLWithHead(w io.Writer, events []Event, sw Software, head Head) error {
	return WriteXMLOptions(w, events, sw, ExportOptions{Head: &head})
}

// ExportOptions are what an export may add to the events.
type ExportOptions struct {
	// Head, when set, is the ledger's chain head at export time (see
	// WriteXMLWithHead).
	Head *Head
	// LedgerHead makes ExportLedger record the ledger's own head (when it
	// is an Auditor, and Head is nil), read once the events are: so every
	// event in the document is at or before the head it names.
	LedgerHead bool
	// Organisation, when set, is the organisation that runs Lazaret: an
	// agent of type organization, linked from every event as implementer.
	Organisation string
	// Unverified, when set, is the first problem of a ledger that did not
	// verify, exported anyway (lazaret events export --unverified): the
	// document says so in a comment before its root, in an agentNote of
	// the exporting software and as verified="false" (and the problem) on
	// its lazaret:ledgerHead.
	Unverified string
	// Archivematica shapes the document for Archivematica's import of a
	// transfer's metadata/premis.xml (docs/archivematica.md): originalName
	// as "objects/" + the path below the batch folder (the file's place in
	// the transfer), message events linked to their interchange's file
	// (Archivematica links events to files only), and no batch entity.
	Archivematica bool
}

// Vocabularies of the Library of Congress used on agents and digests.
const (
	agentTypeAuthority = "http://id.loc.gov/vocabulary/preservation/agentType"
	hashAuthority      = "http://id.loc.gov/vocabulary/preservation/cryptographicHashFunctions"
)

// WriteXMLOptions is WriteXML with the options. Objects are written as a
// preservation system imports them: every file object names its format
// (formatDesignation, and the PRONOM key when identified) and its
// originalName relative to the batch folder when the submission recorded
// it; a message of an interchange ("inv#ref") is a bitstream object with a
// structural relationship to the interchange file. An event with members
// (the messages of a chunk, see Member) links each of them, and not the
// interchange it is filed under.
func WriteXMLOptions(w io.Writer, events []Event, sw Software, opt ExportOptions) error {
	_, err := writeXML(w, func(fn func(Event) error) error {
		for _, e := range events {
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}, sw, &opt)
	return err
}

// ErrNothingToExport: no event matches what an export asked for.
var ErrNothingToExport = errors.New("premis: nothing to export")

// errPastFirstRead stops ExportLedger's second read.
var errPastFirstRead = errors.New("premis: past the export's first read")

// ExportLedger writes the events of l that f selects as WriteXMLOptions
// does, reading them with EachEvent (f.Limit is ignored), twice: once for
// the objects, which come first in a PREMIS document, and once for the
// events, written as they are read. So its memory grows with the objects
// and their event links, not with the events and their envelopes. The
// second read stops where the first ended: events stored after that are
// left out of both, so every event written is under an object written (the
// first read itself follows appends made while it runs, to where it finds
// the end). It returns how many events it wrote; with none
// (ErrNothingToExport) it writes nothing.
func ExportLedger(ctx context.Context, w io.Writer, l Ledger, f Filter, sw Software, opt ExportOptions) (int, error) {
	f.Limit = 0
	upTo, reads := int64(math.MaxInt64), 0
	return writeXML(w, func(fn func(Event) error) error {
		reads++
		var last int64
		err := EachEvent(ctx, l, f, func(e Event) error {
			if e.Seq > upTo {
				return errPastFirstRead
			}
			last = e.Seq
			return fn(e)
		})
		if err != nil && !errors.Is(err, errPastFirstRead) {
			return err
		}
		if reads > 1 {
			return nil
		}
		upTo = last
		if a, ok := l.(Auditor); ok && opt.LedgerHead && opt.Head == nil {
			head, has, err := a.RecordedHead(ctx)
			if err != nil {
				return err
			}
			if has {
				opt.Head = &head
			}
		}
		return nil
	}, sw, &opt)
}

// writeXML writes the document of the events each hands over, which it
// calls twice (objects first, then events) and which must hand over the
// same events both times; opt.Head is read once the first has (see
// ExportLedger). It returns how many events it wrote.
func writeXML(w io.Writer, each func(fn func(Event) error) error, sw Software, opt *ExportOptions) (int, error) {
	type object struct {
		id, sha, puid, path, rel, kind string
		size                           int64
		events                         []string
	}
	// shape is the event as the document has it, and whether it is in it.
	shape := func(e Event) (Event, bool) { return e, true }
	if opt.Archivematica {
		shape = func(e Event) (Event, bool) {
			if e.Kind == kindBatch {
				return e, false
			}
			if parent, _, ok := strings.Cut(e.ObjectID, "#"); ok {
				e.ObjectID = parent
			}
			e.Members = nil // linked to the interchange's file, which is their ObjectID
			return e, true
		}
	}
	objects := map[string]*object{}
	var order []string
	objectOf := func(id string) *object {
		o := objects[id]
		if o == nil {
			o = &object{id: id}
			objects[id] = o
			order = append(order, id)
		}
		return o
	}
	n, all := 0, 0 // events in the document, and read
	err := each(func(e Event) error {
		all++
		e, ok := shape(e)
		if !ok {
			return nil
		}
		n++
		if len(e.Members) > 0 {
			for _, m := range e.Members {
				o := objectOf(m.ObjectID)
				o.kind = e.Kind
				o.events = append(o.events, e.ID)
			}
			return nil
		}
		o := objectOf(e.ObjectID)
		if e.SHA256 != "" {
			o.sha = e.SHA256
		}
		if e.Size > 0 {
			o.size = e.Size
		}
		if e.PUID != "" {
			o.puid = e.PUID
		}
		if e.Path != "" {
			o.path = e.Path
		}
		if e.Kind != "" {
			o.kind = e.Kind
		}
		if rel := relativeName(e.Envelope); rel != "" {
			o.rel = rel
		}
		o.events = append(o.events, e.ID)
		return nil
	})
	switch {
	case err != nil:
		return 0, err
	case all == 0:
		return 0, fmt.Errorf("%w: no events match", ErrNothingToExport)
	case n == 0:
		return 0, fmt.Errorf("%w for Archivematica: only batch events match", ErrNothingToExport)
	}
	bw := bufio.NewWriter(w)
	x := &xw{w: bw}
	x.raw(xml.Header)
	if opt.Unverified != "" {
		x.raw("<!-- UNVERIFIED EXPORT: the ledger did not verify: " + commentText(opt.Unverified) + " -->\n")
	}
	x.raw(`<premis:premis xmlns:premis="` + NamespacePREMIS + `" xmlns:xsi="` + namespaceXSI + `" xmlns:lazaret="` + NamespaceLazaret + `" version="3.0">` + "\n")
	for _, id := range order {
		o := objects[id]
		if o.kind == kindBatch {
			// A batch is what was submitted together, not a file.
			x.open(`premis:object xsi:type="premis:intellectualEntity"`)
			x.open("premis:objectIdentifier")
			x.elem("premis:objectIdentifierType", "local")
			x.elem("premis:objectIdentifierValue", o.id)
			x.close("premis:objectIdentifier")
			writeEventLinks(x, o.events)
			x.close("premis:object")
			continue
		}
		parent, _, message := strings.Cut(o.id, "#")
		if message {
			x.open(`premis:object xsi:type="premis:bitstream"`)
		} else {
			x.open(`premis:object xsi:type="premis:file"`)
		}
		x.open("premis:objectIdentifier")
		x.elem("premis:objectIdentifierType", "local")
		x.elem("premis:objectIdentifierValue", o.id)
		x.close("premis:objectIdentifier")
		x.open("premis:objectCharacteristics")
		if !message {
			x.elem("premis:compositionLevel", "0")
		}
		if o.sha != "" && !message {
			x.open("premis:fixity")
			x.openAttr("premis:messageDigestAlgorithm", "authority", "cryptographicHashFunctions", "authorityURI", hashAuthority, "valueURI", hashAuthority+"/sha256")
			x.text("SHA-256")
			x.close("premis:messageDigestAlgorithm")
			x.elem("premis:messageDigest", o.sha)
			x.close("premis:fixity")
		}
		if o.size > 0 && !message {
			x.elem("premis:size", strconv.FormatInt(o.size, 10))
		}
		x.open("premis:format")
		name, version := formatOf(o.puid, o.kind, message)
		x.open("premis:formatDesignation")
		x.elem("premis:formatName", name)
		if version != "" {
			x.elem("premis:formatVersion", version)
		}
		x.close("premis:formatDesignation")
		if o.puid != "" {
			x.open("premis:formatRegistry")
			x.elem("premis:formatRegistryName", "PRONOM")
			x.elem("premis:formatRegistryKey", o.puid)
			x.elem("premis:formatRegistryRole", "specification")
			x.close("premis:formatRegistry")
		}
		x.close("premis:format")
		x.close("premis:objectCharacteristics")
		switch {
		case message:
		case opt.Archivematica && o.rel != "":
			x.elem("premis:originalName", "objects/"+o.rel)
		case opt.Archivematica && o.path != "":
			x.elem("premis:originalName", "objects/"+path.Base(filepath.ToSlash(o.path)))
		case o.rel != "":
			x.elem("premis:originalName", o.rel)
		case o.path != "":
			x.elem("premis:originalName", o.path)
		}
		if message {
			x.open("premis:relationship")
			// The PREMIS Data Dictionary's terms; no valueURI is claimed
			// for them.
			x.elem("premis:relationshipType", "structural")
			x.elem("premis:relationshipSubType", "is included in")
			x.open("premis:relatedObjectIdentifier")
			x.elem("premis:relatedObjectIdentifierType", "local")
			x.elem("premis:relatedObjectIdentifierValue", parent)
			x.close("premis:relatedObjectIdentifier")
			x.close("premis:relationship")
		}
		writeEventLinks(x, o.events)
		x.close("premis:object")
	}

	operators := map[string]bool{}
	written := 0
	if err := each(func(e Event) error {
		e, ok := shape(e)
		if !ok {
			return nil
		}
		writeEvent(x, e, sw, opt.Organisation)
		written++
		if e.Operator != "" {
			operators[e.Operator] = true
		}
		return x.err
	}); err != nil {
		return 0, err
	}
	if written != n {
		return 0, fmt.Errorf("premis: export: %d events on the second read, %d on the first", written, n)
	}

	x.open("premis:agent")
	x.open("premis:agentIdentifier")
	x.elem("premis:agentIdentifierType", "software")
	x.elem("premis:agentIdentifierValue", sw.ID())
	x.close("premis:agentIdentifier")
	x.elem("premis:agentName", sw.Name)
	agentType(x, "software", "sof")
	x.elem("premis:agentVersion", sw.Version)
	if head := opt.Head; head != nil || opt.Unverified != "" {
		var attrs []string
		if head != nil {
			x.elem("premis:agentNote", fmt.Sprintf("ledger chain head: %d events, last hash %s", head.Count, head.Hash))
			attrs = append(attrs, "events", strconv.FormatInt(head.Count, 10), "hash", head.Hash)
		}
		if opt.Unverified != "" {
			x.elem("premis:agentNote", "UNVERIFIED: the ledger did not verify when this was exported: "+opt.Unverified)
			attrs = append(attrs, "verified", "false", "problem", opt.Unverified)
		}
		x.open("premis:agentExtension")
		x.openAttr("lazaret:ledgerHead", attrs...)
		x.close("lazaret:ledgerHead")
		x.close("premis:agentExtension")
	}
	x.close("premis:agent")
	if opt.Organisation != "" {
		x.open("premis:agent")
		x.open("premis:agentIdentifier")
		x.elem("premis:agentIdentifierType", "organization")
		x.elem("premis:agentIdentifierValue", opt.Organisation)
		x.close("premis:agentIdentifier")
		x.elem("premis:agentName", opt.Organisation)
		agentType(x, "organization", "org")
		x.close("premis:agent")
	}
	names := make([]string, 0, len(operators))
	for n := range operators {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		x.open("premis:agent")
		x.open("premis:agentIdentifier")
		x.elem("premis:agentIdentifierType", "operator")
		x.elem("premis:agentIdentifierValue", n)
		x.close("premis:agentIdentifier")
		x.elem("premis:agentName", n)
		agentType(x, "person", "per")
		x.close("premis:agent")
	}
	x.raw("</premis:premis>\n")
	if x.err != nil {
		return 0, x.err
	}
	return n, bw.Flush()
}

// kindBatch is the kind of a batch's own events (ingest.KindBatch).
const kindBatch = "batch"

func writeEventLinks(x *xw, ids []string) {
	for _, eid := range ids {
		x.open("premis:linkingEventIdentifier")
		x.elem("premis:linkingEventIdentifierType", "UUID")
		x.elem("premis:linkingEventIdentifierValue", eid)
		x.close("premis:linkingEventIdentifier")
	}
}

// agentType writes an agentType with its LoC authority.
func agentType(x *xw, name, code string) {
	x.openAttr("premis:agentType", "authority", "agentType", "authorityURI", agentTypeAuthority, "valueURI", agentTypeAuthority+"/"+code)
	x.text(name)
	x.close("premis:agentType")
}

// formatOf names an object's format: the PRONOM format of its key, or for
// an interchange (and its messages) UN/EDIFACT, which PRONOM does not
// register.
func formatOf(puid, kind string, message bool) (name, version string) {
	switch puid {
	case "fmt/353":
		return "Tagged Image File Format", "6.0"
	case "fmt/1917":
		return "BigTIFF", ""
	case "fmt/155":
		return "Geographic Tagged Image File Format (GeoTIFF)", ""
	case "fmt/154":
		return "Tagged Image File Format for Electronic Photography (TIFF/EP)", ""
	}
	switch {
	case kind == "edifact" && message:
		return "UN/EDIFACT message", "ISO 9735"
	case kind == "edifact":
		return "UN/EDIFACT interchange", "ISO 9735"
	}
	return "unidentified", ""
}

// relativeName is the path below the batch folder that a submission
// recorded in its envelope ("rel"), or "".
func relativeName(envelope []byte) string {
	if len(envelope) == 0 {
		return ""
	}
	var env struct {
		Rel string `json:"rel"`
	}
	if json.Unmarshal(envelope, &env) != nil {
		return ""
	}
	return env.Rel
}

func writeEvent(x *xw, e Event, sw Software, organisation string) {
	x.open("premis:event")
	x.open("premis:eventIdentifier")
	x.elem("premis:eventIdentifierType", "UUID")
	x.elem("premis:eventIdentifierValue", e.ID)
	x.close("premis:eventIdentifier")
	x.openAttr("premis:eventType", "authority", "eventType", "authorityURI", "http://id.loc.gov/vocabulary/preservation/eventType", "valueURI", e.Type.URI())
	x.text(string(e.Type))
	x.close("premis:eventType")
	x.elem("premis:eventDateTime", e.DateTime.UTC().Format(time.RFC3339Nano))
	if e.Detail != "" {
		x.open("premis:eventDetailInformation")
		x.elem("premis:eventDetail", e.Detail)
		x.close("premis:eventDetailInformation")
	}
	if e.Hash != "" {
		x.open("premis:eventDetailInformation")
		x.open("premis:eventDetailExtension")
		x.openAttr("lazaret:chain", "seq", strconv.FormatInt(e.Seq, 10), "prevHash", e.PrevHash, "hash", e.Hash)
		x.close("lazaret:chain")
		x.close("premis:eventDetailExtension")
		x.close("premis:eventDetailInformation")
	}
	x.open("premis:eventOutcomeInformation")
	x.openAttr("premis:eventOutcome", "authority", "eventOutcome", "authorityURI", "http://id.loc.gov/vocabulary/preservation/eventOutcome", "valueURI", e.Outcome.URI())
	x.text(string(e.Outcome))
	x.close("premis:eventOutcome")
	note := e.Note
	if note == "" {
		note = e.Message
	}
	// The routing facts: as lazaret:failure on a failure, lazaret:routing
	// (destination, batch, attempt) on any other event that has them.
	failure := e.Outcome == Failure || e.Class != "" || e.Code != "" || e.Offset != nil
	routing := !failure && (e.Destination != "" || e.BatchID != "")
	if note != "" || failure || routing {
		x.open("premis:eventOutcomeDetail")
		if note != "" {
			x.elem("premis:eventOutcomeDetailNote", note)
		}
		if failure {
			x.open("premis:eventOutcomeDetailExtension")
			attrs := []string{}
			add := func(k, v string) {
				if v != "" {
					attrs = append(attrs, k, v)
				}
			}
			add("class", string(e.Class))
			add("code", e.Code)
			add("destination", string(e.Destination))
			if e.Offset != nil {
				add("offset", strconv.FormatInt(*e.Offset, 10))
			}
			if e.Page != nil {
				add("page", strconv.Itoa(*e.Page))
			}
			if e.Segment > 0 {
				add("segment", strconv.Itoa(e.Segment))
			}
			if e.Element > 0 {
				add("element", strconv.Itoa(e.Element))
			}
			if e.Component > 0 {
				add("component", strconv.Itoa(e.Component))
			}
			add("tag", e.Tag)
			if e.Attempt > 0 {
				add("attempt", strconv.Itoa(e.Attempt))
			}
			if e.Retries > 0 {
				add("retries", strconv.Itoa(e.Retries))
			}
			add("replayOf", e.ReplayOf)
			add("batch", e.BatchID)
			add("correlation", e.CorrelationID)
			x.openAttr("lazaret:failure", attrs...)
			x.text(e.Message)
			x.close("lazaret:failure")
			x.close("premis:eventOutcomeDetailExtension")
		}
		if routing {
			x.open("premis:eventOutcomeDetailExtension")
			attrs := []string{}
			for _, kv := range [][2]string{{"destination", string(e.Destination)}, {"batch", e.BatchID}, {"correlation", e.CorrelationID}, {"replayOf", e.ReplayOf}} {
				if kv[1] != "" {
					attrs = append(attrs, kv[0], kv[1])
				}
			}
			if e.Attempt > 0 {
				attrs = append(attrs, "attempt", strconv.Itoa(e.Attempt))
			}
			x.openAttr("lazaret:routing", attrs...)
			x.close("lazaret:routing")
			x.close("premis:eventOutcomeDetailExtension")
		}
		x.close("premis:eventOutcomeDetail")
	}
	x.close("premis:eventOutcomeInformation")
	agent := e.Agent
	if agent == "" {
		agent = sw.ID()
	}
	role := "exe"
	if e.Type == Validation || e.Type == FixityCheck || e.Type == FormatIdentification {
		role = "val"
	}
	x.linkAgent("software", agent, role)
	if e.Operator != "" {
		x.linkAgent("operator", e.Operator, "imp")
	}
	if organisation != "" {
		x.linkAgent("organization", organisation, "imp")
	}
	if len(e.Members) == 0 {
		x.linkObject(e.ObjectID)
	}
	for _, m := range e.Members {
		x.linkObject(m.ObjectID)
	}
	x.close("premis:event")
}

// linkAgent writes a linkingAgentIdentifier with its role (a code of the
// LoC eventRelatedAgentRole vocabulary).
func (x *xw) linkAgent(typ, value, role string) {
	x.open("premis:linkingAgentIdentifier")
	x.elem("premis:linkingAgentIdentifierType", typ)
	x.elem("premis:linkingAgentIdentifierValue", value)
	x.openAttr("premis:linkingAgentRole", "authority", "eventRelatedAgentRole", "valueURI", AgentRoleAuthority+role)
	x.text(role)
	x.close("premis:linkingAgentRole")
	x.close("premis:linkingAgentIdentifier")
}

// linkObject writes a linkingObjectIdentifier: a local object id, in the
// role of the event's source.
func (x *xw) linkObject(id string) {
	x.open("premis:linkingObjectIdentifier")
	x.elem("premis:linkingObjectIdentifierType", "local")
	x.elem("premis:linkingObjectIdentifierValue", id)
	x.openAttr("premis:linkingObjectRole", "authority", "eventRelatedObjectRole", "valueURI", ObjectRoleAuthority+"sou")
	x.text("sou")
	x.close("premis:linkingObjectRole")
	x.close("premis:linkingObjectIdentifier")
}

// xw is a tiny streaming XML writer that keeps the first error.
type xw struct {
	w   io.Writer
	err error
}

func (x *xw) raw(s string) {
	if x.err == nil {
		_, x.err = io.WriteString(x.w, s)
	}
}

func (x *xw) text(s string) {
	if x.err == nil {
		x.err = xml.EscapeText(x.w, []byte(s))
	}
}

func (x *xw) open(tag string) { x.raw("<" + tag + ">") }

func (x *xw) openAttr(tag string, kv ...string) {
	x.raw("<" + tag)
	for i := 0; i+1 < len(kv); i += 2 {
		x.raw(" " + kv[i] + `="`)
		x.text(kv[i+1])
		x.raw(`"`)
	}
	x.raw(">")
}

func (x *xw) close(tag string) { x.raw("</" + tag + ">\n") }

func (x *xw) elem(tag, v string) {
	x.open(tag)
	x.text(v)
	x.close(tag)
}

// commentText is s as the text of an XML comment, which may not hold "--".
func commentText(s string) string {
	s = Printable(s)
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "- -")
	}
	return s
}
