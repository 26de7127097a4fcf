package premis

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strconv"
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
	return writeXML(w, events, sw, nil)
}

// WriteXMLWithHead is WriteXML, with the ledger's chain head at export time
// recorded on the software agent that exports: an agentNote ("ledger chain
// head: N events, last hash H") and a lazaret:ledgerHead element (events,
// hash) in an agentExtension. Passed back to lazaret ledger verify --anchor
// (as N:H), it shows whether the history exported was rewritten since.
func WriteXMLWithHead(w io.Writer, events []Event, sw Software, head Head) error {
	return writeXML(w, events, sw, &head)
}

func writeXML(w io.Writer, events []Event, sw Software, head *Head) error {
	if len(events) == 0 {
		return fmt.Errorf("premis: nothing to export: no events match")
	}
	bw := bufio.NewWriter(w)
	x := &xw{w: bw}
	x.raw(xml.Header)
	x.raw(`<premis:premis xmlns:premis="` + NamespacePREMIS + `" xmlns:xsi="` + namespaceXSI + `" xmlns:lazaret="` + NamespaceLazaret + `" version="3.0">` + "\n")

	type object struct {
		id, sha, puid, path string
		size                int64
		events              []string
	}
	objects := map[string]*object{}
	var order []string
	for _, e := range events {
		o := objects[e.ObjectID]
		if o == nil {
			o = &object{id: e.ObjectID}
			objects[e.ObjectID] = o
			order = append(order, e.ObjectID)
		}
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
		o.events = append(o.events, e.ID)
	}
	for _, id := range order {
		o := objects[id]
		x.open(`premis:object xsi:type="premis:file"`)
		x.open("premis:objectIdentifier")
		x.elem("premis:objectIdentifierType", "local")
		x.elem("premis:objectIdentifierValue", o.id)
		x.close("premis:objectIdentifier")
		x.open("premis:objectCharacteristics")
		x.elem("premis:compositionLevel", "0")
		if o.sha != "" {
			x.open("premis:fixity")
			x.elem("premis:messageDigestAlgorithm", "SHA-256")
			x.elem("premis:messageDigest", o.sha)
			x.close("premis:fixity")
		}
		if o.size > 0 {
			x.elem("premis:size", strconv.FormatInt(o.size, 10))
		}
		x.open("premis:format")
		if o.puid != "" {
			x.open("premis:formatRegistry")
			x.elem("premis:formatRegistryName", "PRONOM")
			x.elem("premis:formatRegistryKey", o.puid)
			x.close("premis:formatRegistry")
		} else {
			x.open("premis:formatDesignation")
			x.elem("premis:formatName", "unidentified")
			x.close("premis:formatDesignation")
		}
		x.close("premis:format")
		x.close("premis:objectCharacteristics")
		if o.path != "" {
			x.elem("premis:originalName", o.path)
		}
		for _, eid := range o.events {
			x.open("premis:linkingEventIdentifier")
			x.elem("premis:linkingEventIdentifierType", "UUID")
			x.elem("premis:linkingEventIdentifierValue", eid)
			x.close("premis:linkingEventIdentifier")
		}
		x.close("premis:object")
	}

	operators := map[string]bool{}
	for _, e := range events {
		writeEvent(x, e, sw)
		if e.Operator != "" {
			operators[e.Operator] = true
		}
	}

	x.open("premis:agent")
	x.open("premis:agentIdentifier")
	x.elem("premis:agentIdentifierType", "software")
	x.elem("premis:agentIdentifierValue", sw.ID())
	x.close("premis:agentIdentifier")
	x.elem("premis:agentName", sw.Name)
	x.elem("premis:agentType", "software")
	x.elem("premis:agentVersion", sw.Version)
	if head != nil {
		x.elem("premis:agentNote", fmt.Sprintf("ledger chain head: %d events, last hash %s", head.Count, head.Hash))
		x.open("premis:agentExtension")
		x.openAttr("lazaret:ledgerHead", "events", strconv.FormatInt(head.Count, 10), "hash", head.Hash)
		x.close("lazaret:ledgerHead")
		x.close("premis:agentExtension")
	}
	x.close("premis:agent")
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
		x.elem("premis:agentType", "person")
		x.close("premis:agent")
	}
	x.raw("</premis:premis>\n")
	if x.err != nil {
		return x.err
	}
	return bw.Flush()
}

func writeEvent(x *xw, e Event, sw Software) {
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
	failure := e.Class != "" || e.Code != "" || e.Offset != nil || e.Destination != ""
	if note != "" || failure {
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
		x.close("premis:eventOutcomeDetail")
	}
	x.close("premis:eventOutcomeInformation")
	agent := e.Agent
	if agent == "" {
		agent = sw.ID()
	}
	x.open("premis:linkingAgentIdentifier")
	x.elem("premis:linkingAgentIdentifierType", "software")
	x.elem("premis:linkingAgentIdentifierValue", agent)
	role := "exe"
	if e.Type == Validation || e.Type == FixityCheck || e.Type == FormatIdentification {
		role = "val"
	}
	x.openAttr("premis:linkingAgentRole", "authority", "eventRelatedAgentRole", "valueURI", AgentRoleAuthority+role)
	x.text(role)
	x.close("premis:linkingAgentRole")
	x.close("premis:linkingAgentIdentifier")
	if e.Operator != "" {
		x.open("premis:linkingAgentIdentifier")
		x.elem("premis:linkingAgentIdentifierType", "operator")
		x.elem("premis:linkingAgentIdentifierValue", e.Operator)
		x.openAttr("premis:linkingAgentRole", "authority", "eventRelatedAgentRole", "valueURI", AgentRoleAuthority+"imp")
		x.text("imp")
		x.close("premis:linkingAgentRole")
		x.close("premis:linkingAgentIdentifier")
	}
	x.open("premis:linkingObjectIdentifier")
	x.elem("premis:linkingObjectIdentifierType", "local")
	x.elem("premis:linkingObjectIdentifierValue", e.ObjectID)
	x.openAttr("premis:linkingObjectRole", "authority", "eventRelatedObjectRole", "valueURI", ObjectRoleAuthority+"sou")
	x.text("sou")
	x.close("premis:linkingObjectRole")
	x.close("premis:linkingObjectIdentifier")
	x.close("premis:event")
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
