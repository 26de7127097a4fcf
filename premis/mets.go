package premis

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Namespaces of a METS export.
const (
	NamespaceMETS      = "http://www.loc.gov/METS/"
	namespaceXLink     = "http://www.w3.org/1999/xlink"
	schemaLocationMETS = NamespaceMETS + " http://www.loc.gov/standards/mets/version1121/mets.xsd"
)

// mets writes the METS document of an export (ExportOptions.METS), as
// Archivematica's METS holds PREMIS: one amdSec per file object, with the
// object in a techMD, each of its events and each agent they link in a
// digiprovMD of their own (mdWrap PREMIS:OBJECT, PREMIS:EVENT,
// PREMIS:AGENT, xmlData), every entity standing alone (namespaces,
// xsi:schemaLocation, version 3.0); then a fileSec with one file per object
// (ADMID its amdSec, FLocat its place in the transfer) and a physical
// structMap of the folders below objects/. The events are read by id, an
// object at a time, so memory holds the objects and their links, as the
// premis:premis document's does.
func (d *doc) mets(objects map[string]*object, order []string, src source, shape func(Event) (Event, bool), n int) error {
	x := d.x
	created := d.opt.Created
	if created.IsZero() {
		created = time.Now()
	}
	x.raw(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	d.unverifiedComment()
	x.raw(`<mets:mets xmlns:mets="` + NamespaceMETS + `" xmlns:xlink="` + namespaceXLink + `" xmlns:xsi="` + namespaceXSI +
		`" xsi:schemaLocation="` + schemaLocationMETS + `">` + "\n")
	x.openAttr("mets:metsHdr", "CREATEDATE", created.UTC().Format("2006-01-02T15:04:05Z"))
	x.openAttr("mets:agent", "ROLE", "CREATOR", "TYPE", "OTHER", "OTHERTYPE", "SOFTWARE")
	x.elem("mets:name", d.sw.ID())
	x.close("mets:agent")
	x.close("mets:metsHdr")
	digiprov, written := 0, 0
	mdWrap := func(sec, id, mdtype string, body func()) {
		x.openAttr(sec, "ID", id)
		x.openAttr("mets:mdWrap", "MDTYPE", mdtype)
		x.open("mets:xmlData")
		body()
		x.close("mets:xmlData")
		x.close("mets:mdWrap")
		x.close(sec)
	}
	for i, id := range order {
		o := objects[id]
		num := strconv.Itoa(i + 1)
		x.openAttr("mets:amdSec", "ID", "amdSec_"+num)
		mdWrap("mets:techMD", "techMD_"+num, "PREMIS:OBJECT", func() { d.object(o, wrapped) })
		for _, eid := range o.events {
			e, err := src.byID(eid)
			if err != nil {
				return fmt.Errorf("premis: export: event %s of object %s: %w", eid, o.id, err)
			}
			e, ok := shape(e)
			if !ok || e.ID != eid {
				return fmt.Errorf("premis: export: event %s of object %s is not the one first read", eid, o.id)
			}
			digiprov++
			mdWrap("mets:digiprovMD", "digiprovMD_"+strconv.Itoa(digiprov), "PREMIS:EVENT", func() { d.event(e, wrapped) })
			written++
			if x.err != nil {
				return x.err
			}
		}
		agents := append([]agentRef(nil), o.agents...)
		sortAgents(agents, d.sw)
		for _, a := range agents {
			digiprov++
			mdWrap("mets:digiprovMD", "digiprovMD_"+strconv.Itoa(digiprov), "PREMIS:AGENT", func() { d.agent(a, wrapped) })
		}
		x.close("mets:amdSec")
	}
	if written != n {
		return fmt.Errorf("premis: export: %d events read by id, %d on the first read", written, n)
	}

	// One file per object, in a fileGrp of the originals.
	hrefs := make([]string, len(order))
	x.open("mets:fileSec")
	x.openAttr("mets:fileGrp", "USE", "original")
	for i, id := range order {
		num := strconv.Itoa(i + 1)
		hrefs[i] = originalName(objects[id], true)
		if hrefs[i] == "" {
			hrefs[i] = "objects/" + strings.ReplaceAll(id, "/", "_")
		}
		x.openAttr("mets:file", "ID", "file-"+num, "GROUPID", "Group-"+num, "ADMID", "amdSec_"+num)
		x.openAttr("mets:FLocat", "xlink:href", PathURI(hrefs[i]), "LOCTYPE", "OTHER", "OTHERLOCTYPE", "SYSTEM")
		x.close("mets:FLocat")
		x.close("mets:file")
	}
	x.close("mets:fileGrp")
	x.close("mets:fileSec")

	// The folders below objects/, each a Directory div, each file an Item.
	byPath := make([]int, len(order))
	for i := range byPath {
		byPath[i] = i
	}
	sort.SliceStable(byPath, func(a, b int) bool { return hrefs[byPath[a]] < hrefs[byPath[b]] })
	x.openAttr("mets:structMap", "ID", "structMap_1", "TYPE", "physical", "LABEL", "Lazaret export")
	x.openAttr("mets:div", "TYPE", "Directory", "LABEL", "objects")
	var open []string // the folders below objects/ now open
	for _, i := range byPath {
		dir, name := path.Split(strings.TrimPrefix(hrefs[i], "objects/"))
		var want []string
		if dir = strings.Trim(dir, "/"); dir != "" {
			want = strings.Split(dir, "/")
		}
		common := 0
		for common < len(open) && common < len(want) && open[common] == want[common] {
			common++
		}
		for len(open) > common {
			x.close("mets:div")
			open = open[:len(open)-1]
		}
		for _, folder := range want[common:] {
			x.openAttr("mets:div", "TYPE", "Directory", "LABEL", folder)
			open = append(open, folder)
		}
		x.openAttr("mets:div", "TYPE", "Item", "LABEL", name)
		x.openAttr("mets:fptr", "FILEID", "file-"+strconv.Itoa(i+1))
		x.close("mets:fptr")
		x.close("mets:div")
	}
	for range open {
		x.close("mets:div")
	}
	x.close("mets:div")
	x.close("mets:structMap")
	x.raw("</mets:mets>\n")
	return nil
}

// PathURI is a relative path as a URI reference (RFC 3986): every byte but
// the unreserved characters (ALPHA, DIGIT, '-', '.', '_', '~') and the '/'
// between segments is percent-encoded, so "objects/100% done.tif" is
// "objects/100%25%20done.tif". A raw path is no URI: '%' starts an escape,
// '#' a fragment, '?' a query, a space is not allowed, and '+' is a space to
// a form decoder; percent-decoding PathURI's result (Python's unquote, and
// unquote_plus too, since '+' is encoded) gives the path back, byte for byte.
func PathURI(p string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~', c == '/':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
