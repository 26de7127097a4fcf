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
	"slices"
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

// ExportOptions are what an export may add to the events.
type ExportOptions struct {
	// Head, when set, is the ledger's chain head at export time, recorded
	// on the software agent that exports: an agentNote ("ledger chain
	// head: N events, last hash H") and a lazaret:ledgerHead element
	// (events, hash) in an agentExtension. Passed back to lazaret ledger
	// verify --anchor (as N:H), it shows whether the history exported was
	// rewritten since.
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
	// (Archivematica links events to files only), no batch entity,
	// eventType as the label Archivematica recognises (the LoC term staying
	// its valueURI: EventType.ArchivematicaLabel), and the schema location
	// on the root.
	Archivematica bool
	// METS wraps the export in a METS document as Archivematica's METS
	// holds PREMIS (see mets.go); it shapes the PREMIS as Archivematica
	// does. Its amdSecs pass Archivematica's METS schematron when each
	// file's events link three agents: the software, the organisation
	// (set Organisation) and the submitter.
	METS bool
	// Created is the METS header's CREATEDATE; zero means now.
	Created time.Time
	// Keep, when set, decides which file objects an Archivematica (or METS)
	// export holds: "" keeps the object, anything else is why it is left
	// out, with every event about it and every agent only those events
	// link. A transfer's import fails whole on one object it does not hold
	// (lazaret events export --transfer), so an export for a transfer keeps
	// exactly the files it holds. Keep is asked once an object, after the
	// first read.
	Keep func(KeepQuery) string
	// LeftOut, when set, hears of each object Keep left out, and why.
	LeftOut func(q KeepQuery, why string)
}

// KeepQuery is what ExportOptions.Keep is asked of a file object.
type KeepQuery struct {
	ObjectID string
	// OriginalName is the object's place in the transfer
	// ("objects/<path>"), or "" when no path was recorded.
	OriginalName string
	// SHA256 is the digest Lazaret computed of the bytes it read (its
	// latest successful fixity check), "" when it read none.
	SHA256 string
	// Events is how many events of the export are about the object.
	Events int
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
	var index map[string]int
	_, err := writeXML(w, source{
		each: func(fn func(Event) error) error {
			for _, e := range events {
				if err := fn(e); err != nil {
					return err
				}
			}
			return nil
		},
		byID: func(id string) (Event, error) {
			if index == nil {
				index = make(map[string]int, len(events))
				for i := range events {
					index[events[i].ID] = i
				}
			}
			i, ok := index[id]
			if !ok {
				return Event{}, fmt.Errorf("%w: %s", ErrNotFound, id)
			}
			return events[i], nil
		},
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
// the end). A METS export (opt.METS) writes each object's events beside it
// instead, reading them by id (Ledger.Event) an object at a time, so its
// memory grows as the premis:premis document's does. It returns how many
// events it wrote; with none (ErrNothingToExport) it writes nothing.
func ExportLedger(ctx context.Context, w io.Writer, l Ledger, f Filter, sw Software, opt ExportOptions) (int, error) {
	f.Limit = 0
	upTo, reads := int64(math.MaxInt64), 0
	each := func(fn func(Event) error) error {
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
		if opt.LedgerHead && opt.Head == nil {
			head, has, err := l.RecordedHead(ctx)
			if err != nil {
				return err
			}
			if has {
				opt.Head = &head
			}
		}
		return nil
	}
	byID := func(id string) (Event, error) { return l.Event(ctx, id) }
	return writeXML(w, source{each: each, byID: byID}, sw, &opt)
}

// source is what an export reads: each hands every event over in ledger
// order, and is called twice (objects first, then events; see
// ExportLedger); byID reads one of the events the first call handed over
// (a METS document writes each object's events beside it, not in ledger
// order).
type source struct {
	each func(fn func(Event) error) error
	byID func(id string) (Event, error)
}

// object is what the first read learns of an object: enough to write it,
// and the events (and, for METS, the agents) that link it.
type object struct {
	id, puid, path, rel, kind string
	// fixity is what Lazaret computed from the bytes it read, exported as
	// the object's fixity and size, and what the manifest declared, a
	// claim exported as one.
	fixity Fixity
	events []string
	agents []agentRef
}

// agentRef is an agent as an event links it: identifier type and value.
type agentRef struct{ typ, value string }

// The agent identifier types an export writes.
const (
	agentSoftware     = "software"
	agentOrganisation = "organization"
	agentOperator     = "operator"
)

// eventAgents are the agents e links, with their roles (codes of the LoC
// eventRelatedAgentRole vocabulary): the software that ran it, the operator
// who acted, the organisation that runs Lazaret.
func eventAgents(e Event, sw Software, organisation string) (refs []agentRef, roles []string) {
	agent := e.Agent
	if agent == "" {
		agent = sw.ID()
	}
	role := "exe"
	if e.Type == Validation || e.Type == FixityCheck || e.Type == FormatIdentification {
		role = "val"
	}
	refs, roles = append(refs, agentRef{agentSoftware, agent}), append(roles, role)
	if e.Operator != "" {
		refs, roles = append(refs, agentRef{agentOperator, e.Operator}), append(roles, "imp")
	}
	if organisation != "" {
		refs, roles = append(refs, agentRef{agentOrganisation, organisation}), append(roles, "imp")
	}
	return refs, roles
}

// sortAgents orders agents as an export writes them: the exporting
// software first, then other software (earlier versions that wrote events),
// the organisation, and the operators, each by value.
func sortAgents(refs []agentRef, sw Software) {
	rank := func(a agentRef) int {
		switch {
		case a.typ == agentSoftware && a.value == sw.ID():
			return 0
		case a.typ == agentSoftware:
			return 1
		case a.typ == agentOrganisation:
			return 2
		}
		return 3
	}
	sort.Slice(refs, func(i, j int) bool {
		if ri, rj := rank(refs[i]), rank(refs[j]); ri != rj {
			return ri < rj
		}
		return refs[i].value < refs[j].value
	})
}

// writeXML writes the document of the events src hands over; opt.Head is
// read once its first read has (see ExportLedger). It returns how many
// events it wrote.
func writeXML(w io.Writer, src source, sw Software, opt *ExportOptions) (int, error) {
	archivematica := opt.Archivematica || opt.METS
	// shape is the event as the document has it, and whether it is in it.
	shape := func(e Event) (Event, bool) { return e, true }
	if archivematica {
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
	agents := map[agentRef]bool{}
	n, all := 0, 0 // events in the document, and read
	err := src.each(func(e Event) error {
		all++
		e, ok := shape(e)
		if !ok {
			return nil
		}
		n++
		refs, _ := eventAgents(e, sw, opt.Organisation)
		for _, a := range refs {
			agents[a] = true
		}
		if len(e.Members) > 0 {
			for _, m := range e.Members {
				o := objectOf(m.ObjectID)
				o.kind = e.Kind
				o.events = append(o.events, e.ID)
			}
			return nil
		}
		o := objectOf(e.ObjectID)
		// The latest fixity check says what the bytes are: one that
		// failed, or read nothing, leaves no digest to claim.
		o.fixity.Observe(e)
		// Its name in the batch is the submission's, whatever file a
		// replay read: a corrected file is no rename.
		if rel := envelopeOf(e.Envelope).name(); rel != "" && o.rel == "" {
			o.rel = rel
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
		o.events = append(o.events, e.ID)
		if opt.METS || opt.Keep != nil {
			for _, a := range refs {
				if !slices.Contains(o.agents, a) {
					o.agents = append(o.agents, a)
				}
			}
		}
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
	if opt.Keep != nil {
		if !archivematica {
			return 0, errors.New("premis: export: Keep is for an Archivematica or METS export")
		}
		var kept []string
		left := map[string]bool{}
		clear(agents)
		for _, id := range order {
			o := objects[id]
			q := KeepQuery{ObjectID: id, OriginalName: originalName(o, true), SHA256: o.fixity.ComputedSHA256, Events: len(o.events)}
			if why := opt.Keep(q); why != "" {
				left[id] = true
				n -= len(o.events)
				delete(objects, id)
				if opt.LeftOut != nil {
					opt.LeftOut(q, why)
				}
				continue
			}
			kept = append(kept, id)
			for _, a := range o.agents {
				agents[a] = true
			}
		}
		if n == 0 {
			return 0, fmt.Errorf("%w: the transfer holds none of the files the events are about", ErrNothingToExport)
		}
		order = kept
		inner := shape
		shape = func(e Event) (Event, bool) {
			e, ok := inner(e)
			return e, ok && !left[e.ObjectID]
		}
	}
	refs := make([]agentRef, 0, len(agents)+1)
	refs = append(refs, agentRef{agentSoftware, sw.ID()}) // the exporter, even when no event names it
	for a := range agents {
		if a != refs[0] {
			refs = append(refs, a)
		}
	}
	sortAgents(refs, sw)

	bw := bufio.NewWriter(w)
	x := &xw{w: bw}
	d := &doc{x: x, sw: sw, opt: opt}
	if opt.METS {
		err = d.mets(objects, order, src, shape, n)
	} else {
		err = d.premis(objects, order, refs, src, shape, n)
	}
	if err != nil {
		return 0, err
	}
	if x.err != nil {
		return 0, x.err
	}
	return n, bw.Flush()
}

// doc writes the entities of one export.
type doc struct {
	x   *xw
	sw  Software
	opt *ExportOptions
}

// premis writes the premis:premis document: the objects, the events as the
// second read hands them over, then the agents.
func (d *doc) premis(objects map[string]*object, order []string, agents []agentRef, src source, shape func(Event) (Event, bool), n int) error {
	x := d.x
	x.raw(xml.Header)
	d.unverifiedComment()
	root := `<premis:premis xmlns:premis="` + NamespacePREMIS + `" xmlns:xsi="` + namespaceXSI + `" xmlns:lazaret="` + NamespaceLazaret + `"`
	if d.opt.Archivematica {
		root += ` xsi:schemaLocation="` + schemaLocationPREMIS + `"`
	}
	x.raw(root + ` version="3.0">` + "\n")
	for _, id := range order {
		d.object(objects[id], "")
	}
	written := 0
	if err := src.each(func(e Event) error {
		e, ok := shape(e)
		if !ok {
			return nil
		}
		d.event(e, "")
		written++
		return x.err
	}); err != nil {
		return err
	}
	if written != n {
		return fmt.Errorf("premis: export: %d events on the second read, %d on the first", written, n)
	}
	for _, a := range agents {
		d.agent(a, "")
	}
	x.raw("</premis:premis>\n")
	return nil
}

// schemaLocationPREMIS is the xsi:schemaLocation of a PREMIS 3.0 entity.
const schemaLocationPREMIS = NamespacePREMIS + " http://www.loc.gov/standards/premis/v3/premis.xsd"

// wrapped is what opens a PREMIS entity that stands alone in a METS
// mdWrap, as Archivematica writes them: its namespaces, schema location
// and version.
const wrapped = ` xmlns:premis="` + NamespacePREMIS + `" xmlns:xsi="` + namespaceXSI + `" xmlns:lazaret="` + NamespaceLazaret +
	`" xsi:schemaLocation="` + schemaLocationPREMIS + `" version="3.0"`

// object writes o; wrap is "" in a premis:premis document, else wrapped.
func (d *doc) object(o *object, wrap string) {
	x, opt := d.x, d.opt
	if o.kind == kindBatch {
		// A batch is what was submitted together, not a file.
		x.raw(`<premis:object xsi:type="premis:intellectualEntity"` + wrap + ">")
		x.open("premis:objectIdentifier")
		x.elem("premis:objectIdentifierType", "local")
		x.elem("premis:objectIdentifierValue", o.id)
		x.close("premis:objectIdentifier")
		writeEventLinks(x, o.events)
		x.close("premis:object")
		return
	}
	parent, _, message := strings.Cut(o.id, "#")
	if message {
		x.raw(`<premis:object xsi:type="premis:bitstream"` + wrap + ">")
	} else {
		x.raw(`<premis:object xsi:type="premis:file"` + wrap + ">")
	}
	x.open("premis:objectIdentifier")
	x.elem("premis:objectIdentifierType", "local")
	x.elem("premis:objectIdentifierValue", o.id)
	x.close("premis:objectIdentifier")
	if !message {
		// What the manifest claims is a claim: never fixity, which is
		// only what Lazaret computed from the bytes it read.
		if o.fixity.DeclaredSHA256 != "" {
			declared(x, "declared sha256", o.fixity.DeclaredSHA256)
		}
		if o.fixity.DeclaredSize > 0 {
			declared(x, "declared size", strconv.FormatInt(o.fixity.DeclaredSize, 10))
		}
	}
	x.open("premis:objectCharacteristics")
	if !message {
		x.elem("premis:compositionLevel", "0")
	}
	if o.fixity.ComputedSHA256 != "" && !message {
		x.open("premis:fixity")
		x.openAttr("premis:messageDigestAlgorithm", "authority", "cryptographicHashFunctions", "authorityURI", hashAuthority, "valueURI", hashAuthority+"/sha256")
		x.text("SHA-256")
		x.close("premis:messageDigestAlgorithm")
		x.elem("premis:messageDigest", o.fixity.ComputedSHA256)
		x.elem("premis:messageDigestOriginator", d.sw.Name)
		x.close("premis:fixity")
	}
	if o.fixity.ComputedSize > 0 && !message {
		x.elem("premis:size", strconv.FormatInt(o.fixity.ComputedSize, 10))
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
	if name := originalName(o, opt.Archivematica || opt.METS); name != "" && !message {
		x.elem("premis:originalName", name)
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

// originalName is a file object's originalName: the path below the batch
// folder as the submission recorded it, else the path it was read from;
// for Archivematica, its place in the transfer ("objects/" + that path, or
// + the file's name when only the path read is known).
func originalName(o *object, archivematica bool) string {
	switch {
	case archivematica && o.rel != "":
		return "objects/" + o.rel
	case archivematica && o.path != "":
		return "objects/" + path.Base(filepath.ToSlash(o.path))
	case o.rel != "":
		return o.rel
	}
	return o.path
}

// declared writes a value the manifest declared as a significant property
// of the object, its type naming it as declared.
func declared(x *xw, typ, value string) {
	x.open("premis:significantProperties")
	x.elem("premis:significantPropertiesType", typ)
	x.elem("premis:significantPropertiesValue", value)
	x.close("premis:significantProperties")
}

// agent writes one agent; the exporting software carries the ledger's
// chain head when the export has one.
func (d *doc) agent(a agentRef, wrap string) {
	x := d.x
	x.raw("<premis:agent" + wrap + ">")
	x.open("premis:agentIdentifier")
	x.elem("premis:agentIdentifierType", a.typ)
	x.elem("premis:agentIdentifierValue", a.value)
	x.close("premis:agentIdentifier")
	switch a.typ {
	case agentSoftware:
		name, version := d.sw.Name, d.sw.Version
		if a.value != d.sw.ID() {
			name, version, _ = strings.Cut(a.value, "/")
		}
		x.elem("premis:agentName", name)
		agentType(x, "software", "sof")
		if version != "" {
			x.elem("premis:agentVersion", version)
		}
		if head := d.opt.Head; (head != nil || d.opt.Unverified != "") && a.value == d.sw.ID() {
			var attrs []string
			if head != nil {
				x.elem("premis:agentNote", fmt.Sprintf("ledger chain head: %d events, last hash %s", head.Count, head.Hash))
				attrs = append(attrs, "events", strconv.FormatInt(head.Count, 10), "hash", head.Hash)
			}
			if d.opt.Unverified != "" {
				x.elem("premis:agentNote", "UNVERIFIED: the ledger did not verify when this was exported: "+d.opt.Unverified)
				attrs = append(attrs, "verified", "false", "problem", d.opt.Unverified)
			}
			x.open("premis:agentExtension")
			x.openAttr("lazaret:ledgerHead", attrs...)
			x.close("lazaret:ledgerHead")
			x.close("premis:agentExtension")
		}
	case agentOrganisation:
		x.elem("premis:agentName", a.value)
		agentType(x, "organization", "org")
	default:
		x.elem("premis:agentName", a.value)
		agentType(x, "person", "per")
	}
	x.close("premis:agent")
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

// envelope is what an export reads of an event's envelope (the submission's
// task envelope, ingest.Envelope): the path below the batch folder ("rel")
// and what the manifest declared of the file.
type envelope struct {
	Rel      string `json:"rel"`
	Manifest struct {
		Path   string `json:"path"`
		SHA256 string `json:"sha256"`
		Size   int64  `json:"size"`
	} `json:"manifest"`
}

// name is the item's path in its batch: the manifest's, which a replay
// with a corrected file keeps (the file read then lies elsewhere), else
// the path it was read from beneath the batch folder.
func (e envelope) name() string {
	if p := e.Manifest.Path; p != "" && !path.IsAbs(p) {
		if clean := path.Clean(filepath.ToSlash(p)); clean != ".." && !strings.HasPrefix(clean, "../") {
			return clean
		}
	}
	return e.Rel
}

// envelopeOf reads b, an envelope or nothing; what it cannot read is empty.
func envelopeOf(b []byte) envelope {
	var env envelope
	if len(b) == 0 || json.Unmarshal(b, &env) != nil {
		return envelope{}
	}
	if env.Manifest.Size < 0 {
		env.Manifest.Size = 0
	}
	return env
}

// event writes e; wrap is "" in a premis:premis document, else wrapped.
// For Archivematica its eventType is the label Archivematica recognises
// (EventType.ArchivematicaLabel) and its outcome the vocabulary's label, the
// LoC terms staying their valueURIs.
func (d *doc) event(e Event, wrap string) {
	x := d.x
	x.raw("<premis:event" + wrap + ">")
	x.open("premis:eventIdentifier")
	x.elem("premis:eventIdentifierType", "UUID")
	x.elem("premis:eventIdentifierValue", e.ID)
	x.close("premis:eventIdentifier")
	x.openAttr("premis:eventType", "authority", "eventType", "authorityURI", "http://id.loc.gov/vocabulary/preservation/eventType", "valueURI", e.Type.URI())
	if d.opt.Archivematica || d.opt.METS {
		x.text(e.Type.ArchivematicaLabel())
	} else {
		x.text(string(e.Type))
	}
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
		chain := []string{"seq", strconv.FormatInt(e.Seq, 10), "prevHash", e.PrevHash, "hash", e.Hash}
		if e.Record != "" {
			// A step of a record (premis.Step): the chain fields are the
			// record's row's, whose hash covers this event.
			chain = append(chain, "record", e.Record)
		}
		x.openAttr("lazaret:chain", chain...)
		x.close("lazaret:chain")
		x.close("premis:eventDetailExtension")
		x.close("premis:eventDetailInformation")
	}
	x.open("premis:eventOutcomeInformation")
	x.openAttr("premis:eventOutcome", "authority", "eventOutcome", "authorityURI", "http://id.loc.gov/vocabulary/preservation/eventOutcome", "valueURI", e.Outcome.URI())
	if d.opt.Archivematica || d.opt.METS {
		x.text(e.Outcome.Label())
	} else {
		x.text(string(e.Outcome))
	}
	x.close("premis:eventOutcome")
	// The routing facts: as lazaret:failure on a failure, lazaret:routing
	// (destination, batch, attempt) on any other event that has them.
	failure := e.Outcome == Failure || e.Class != "" || e.Code != "" || e.Offset != nil
	routing := !failure && (e.Destination != "" || e.BatchID != "")
	if note := outcomeNote(e, failure, routing); note != "" {
		// Every eventOutcomeDetail carries its note: Archivematica's
		// importer (metsrw) reads eventOutcomeDetailNote from each one and
		// crashes the transfer's job on one without.
		x.open("premis:eventOutcomeDetail")
		x.elem("premis:eventOutcomeDetailNote", note)
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
	refs, roles := eventAgents(e, d.sw, d.opt.Organisation)
	for i, a := range refs {
		x.linkAgent(a.typ, a.value, roles[i])
	}
	if len(e.Members) == 0 {
		x.linkObject(e.ObjectID)
	}
	for _, m := range e.Members {
		x.linkObject(m.ObjectID)
	}
	x.close("premis:event")
}

// outcomeNote is the eventOutcomeDetailNote of e: its note, else its
// message, else, for a failure or an event that routed an item, what the
// extension says in words (class, code, where it went); "" when e has no
// outcome detail at all.
func outcomeNote(e Event, failure, routing bool) string {
	switch {
	case e.Note != "":
		return e.Note
	case e.Message != "":
		return e.Message
	case !failure && !routing:
		return ""
	}
	var parts []string
	if e.Class != "" {
		parts = append(parts, string(e.Class))
	}
	if e.Code != "" {
		parts = append(parts, e.Code)
	}
	if e.Offset != nil {
		parts = append(parts, "at byte "+strconv.FormatInt(*e.Offset, 10))
	}
	if e.Destination != "" {
		parts = append(parts, "routed to "+string(e.Destination))
	}
	if e.BatchID != "" {
		parts = append(parts, "batch "+e.BatchID)
	}
	if len(parts) == 0 {
		return string(e.Outcome)
	}
	return strings.Join(parts, "; ")
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

// unverifiedComment says, before the root, that the export was taken
// from a ledger that did not verify (ExportOptions.Unverified).
func (d *doc) unverifiedComment() {
	if d.opt.Unverified != "" {
		d.x.raw("<!-- UNVERIFIED EXPORT: the ledger did not verify: " + commentText(d.opt.Unverified) + " -->\n")
	}
}

// commentText is s as the text of an XML comment, which may not hold "--".
func commentText(s string) string {
	s = Printable(s)
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "- -")
	}
	return s
}
