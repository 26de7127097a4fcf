// Command gen turns the machine-readable UN/EDIFACT message schemas (BizTalk
// XML Schemas from microsoft/Integration, MIT licence) into the compact
// tables of package directory: one line per code list, segment and
// message, with identical code lists and segments shared across messages
// and releases.
//
// Usage (from edifact/directory, through go generate):
//
//	go run ./gen -src ../../../shared/corpus/edifact-directory -out tables.txt
//
// An output name ending in .gz is written gzip-compressed.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

func main() {
	src := flag.String("src", "../../../shared/corpus/edifact-directory", "folder of <release>/EFACT_<release>_<MESSAGE>.xsd.gz")
	out := flag.String("out", "tables.txt", "output file")
	flag.Parse()
	if err := run(*src, *out); err != nil {
		log.Fatal(err)
	}
}

// node is an XML element with its attributes (local names) and children.
type node struct {
	name string
	attr map[string]string
	kids []*node
}

func (n *node) child(name string) *node {
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

func (n *node) all(name string) []*node {
	var out []*node
	for _, k := range n.kids {
		if k.name == name {
			out = append(out, k)
		}
	}
	return out
}

// find is the first descendant named name, depth first.
func (n *node) find(name string) *node {
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
		if f := k.find(name); f != nil {
			return f
		}
	}
	return nil
}

func parse(data []byte) (*node, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) { return r, nil }
	root := &node{name: "#doc"}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return root, nil
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name.Local, attr: map[string]string{}}
			for _, a := range t.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.kids = append(top.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
}

// readSchema reads a gzip-compressed schema, UTF-8 or UTF-16 (with BOM).
func readSchema(path string) (*node, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) >= 2 && data[0] == 0xff && data[1] == 0xfe {
		u := make([]uint16, (len(data)-2)/2)
		for i := range u {
			u[i] = uint16(data[2+2*i]) | uint16(data[3+2*i])<<8
		}
		data = []byte(string(utf16.Decode(u)))
		data = bytes.Replace(data, []byte(`encoding="utf-16"`), []byte(`encoding="utf-8"`), 1)
	}
	n, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// schema holds one file's global elements and simple types.
type schema struct {
	elements map[string]*node
	types    map[string]*node
	root     *node
}

func newSchema(doc *node) (*schema, error) {
	s := &schema{elements: map[string]*node{}, types: map[string]*node{}}
	top := doc.child("schema")
	if top == nil {
		return nil, fmt.Errorf("no xs:schema")
	}
	for _, k := range top.kids {
		switch k.name {
		case "element":
			s.elements[k.attr["name"]] = k
			if strings.HasPrefix(k.attr["name"], "EFACT_") || strings.HasPrefix(k.attr["name"], "Efact_") {
				s.root = k
			}
		case "simpleType":
			s.types[k.attr["name"]] = k
		}
	}
	if s.root == nil {
		return nil, fmt.Errorf("no message root element")
	}
	return s, nil
}

// tables accumulates the shared code lists and segments.
type tables struct {
	codeIDs map[string]int
	codes   []string
	segIDs  map[string]int
	segs    []string
}

var numRe = regexp.MustCompile(`_(\d{4})$`)

func occurs(n *node) (min, max int) {
	min, max = 1, 1
	if v, ok := n.attr["minOccurs"]; ok {
		min, _ = strconv.Atoi(v)
	}
	if v, ok := n.attr["maxOccurs"]; ok {
		if v == "unbounded" {
			max = 0 // unbounded
		} else {
			max, _ = strconv.Atoi(v)
		}
	}
	return min, max
}

func notes(n *node) string {
	for _, name := range []string{"fieldInfo", "recordInfo"} {
		if f := n.find(name); f != nil {
			if v, ok := f.attr["notes"]; ok {
				return v
			}
		}
	}
	return ""
}

func (t *tables) codeList(values []string) int {
	sort.Strings(values)
	key := strings.Join(values, " ")
	if id, ok := t.codeIDs[key]; ok {
		return id
	}
	id := len(t.codes)
	t.codeIDs[key] = id
	t.codes = append(t.codes, key)
	return id
}

// simple encodes one simple data element: [M|C]<num>:<rep>, rep being
// an<min>-<max>, n<min>-<max>, a<min>-<max> or L<code list>.
func (t *tables) simple(s *schema, el *node, fallbackNum string) (string, error) {
	min, _ := occurs(el)
	status := "M"
	if min == 0 {
		status = "C"
	}
	num := fallbackNum
	if m := numRe.FindStringSubmatch(notes(el)); m != nil {
		num = m[1]
	}
	if num == "" {
		num = "-"
	}
	var rep string
	if typ := el.attr["type"]; typ != "" {
		st := s.types[typ]
		if st == nil {
			return "", fmt.Errorf("element %s: no simple type %s", el.attr["name"], typ)
		}
		var vals []string
		for _, e := range st.find("restriction").all("enumeration") {
			if strings.ContainsAny(e.attr["value"], " \t\n") {
				return "", fmt.Errorf("code %q of %s holds a space", e.attr["value"], typ)
			}
			vals = append(vals, e.attr["value"])
		}
		if len(vals) == 0 {
			return "", fmt.Errorf("element %s: type %s has no codes", el.attr["name"], typ)
		}
		rep = "L" + strconv.Itoa(t.codeList(vals))
	} else {
		r := el.find("restriction")
		if r == nil {
			return "", fmt.Errorf("element %s: no representation", el.attr["name"])
		}
		kind := map[string]string{"EDIFACT_AN": "an", "EDIFACT_N": "n", "EDIFACT_A": "a"}[r.attr["base"]]
		if kind == "" {
			return "", fmt.Errorf("element %s: base %q", el.attr["name"], r.attr["base"])
		}
		lo, hi := 0, 0
		if l := r.child("length"); l != nil {
			lo, _ = strconv.Atoi(l.attr["value"])
			hi = lo
		}
		if l := r.child("minLength"); l != nil {
			lo, _ = strconv.Atoi(l.attr["value"])
		}
		if l := r.child("maxLength"); l != nil {
			hi, _ = strconv.Atoi(l.attr["value"])
		}
		if hi == 0 {
			return "", fmt.Errorf("element %s: no maximum length", el.attr["name"])
		}
		rep = fmt.Sprintf("%s%d-%d", kind, lo, hi)
	}
	return status + num + ":" + rep, nil
}

// segment encodes a segment definition: TAG then its data elements, a
// composite as [M|C]<Cnnn>(component,component...).
func (t *tables) segment(s *schema, tag string, def *node) (int, error) {
	var b strings.Builder
	b.WriteString(tag)
	if seq := def.find("sequence"); seq != nil {
		for _, el := range seq.all("element") {
			min, max := occurs(el)
			b.WriteByte(' ')
			repeat := ""
			if max != 1 {
				repeat = "*" + strconv.Itoa(max) // a repeating data element (syntax 4)
			}
			cdef := el
			name := el.attr["name"]
			if ref := el.attr["ref"]; ref != "" {
				cdef, name = s.elements[ref], ref
				if cdef == nil {
					return 0, fmt.Errorf("%s: no composite %s", tag, ref)
				}
			}
			if cdef.child("complexType") == nil {
				enc, err := t.simple(s, el, "")
				if err != nil {
					return 0, fmt.Errorf("%s: %w", tag, err)
				}
				b.WriteString(enc + repeat)
				continue
			}
			status := "M"
			if min == 0 {
				status = "C"
			}
			num := name
			if i := strings.IndexByte(num, '_'); i >= 0 {
				num = num[:i]
			}
			if !strings.HasPrefix(num, "C") && !strings.HasPrefix(num, "S") && !strings.HasPrefix(num, "E") {
				num = "-" // an inline service composite (UNH2)
			}
			b.WriteString(status + num + "(")
			for i, comp := range cdef.find("sequence").all("element") {
				if i > 0 {
					b.WriteByte(',')
				}
				enc, err := t.simple(s, comp, "")
				if err != nil {
					return 0, fmt.Errorf("%s %s: %w", tag, num, err)
				}
				b.WriteString(enc)
			}
			b.WriteString(")" + repeat)
		}
	}
	key := b.String()
	if id, ok := t.segIDs[key]; ok {
		return id, nil
	}
	id := len(t.segs)
	t.segIDs[key] = id
	t.segs = append(t.segs, key)
	return id, nil
}

// tree encodes a segment table: <segment>/<min>/<max> or
// [ ... ]/<min>/<max> for a group, max 0 meaning unbounded.
func (t *tables) tree(s *schema, seq *node, top bool) (string, error) {
	var parts []string
	for _, el := range seq.all("element") {
		min, max := occurs(el)
		name := el.attr["name"]
		def := el
		if ref := el.attr["ref"]; ref != "" {
			name = strings.TrimPrefix(ref, "ns0:")
			def = s.elements[name]
		}
		if strings.Contains(name, "Loop") {
			if def == nil || def.find("sequence") == nil {
				return "", fmt.Errorf("group %s has no definition", name)
			}
			inner, err := t.tree(s, def.find("sequence"), false)
			if err != nil {
				return "", err
			}
			parts = append(parts, fmt.Sprintf("[ %s ]/%d/%d", inner, min, max))
			continue
		}
		tag := name
		if def != nil {
			if ri := def.child("annotation"); ri != nil {
				if r := ri.find("recordInfo"); r != nil && r.attr["tag_name"] != "" {
					tag = r.attr["tag_name"]
				}
			}
		}
		if i := strings.IndexByte(tag, '_'); i >= 0 {
			tag = tag[:i]
		}
		if len(tag) != 3 {
			return "", fmt.Errorf("segment %s: tag %q", name, tag)
		}
		if top && (tag == "UNH" || tag == "UNT") {
			min = 1 // BizTalk leaves the envelope optional; the message needs it
		}
		var id int
		var err error
		if def == nil { // a service segment from a schema not shipped (CONTRL's ns0:UNH)
			id, err = t.segment(s, tag, &node{})
		} else {
			id, err = t.segment(s, tag, def)
		}
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%d/%d/%d", id, min, max))
	}
	return strings.Join(parts, " "), nil
}

func run(src, out string) error {
	files, err := filepath.Glob(filepath.Join(src, "*", "EFACT_*.xsd.gz"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no schemas under %s", src)
	}
	files = append(files, filepath.Join(src, "Edifact_ContrlSchema.xsd.gz"))
	t := &tables{codeIDs: map[string]int{}, segIDs: map[string]int{}}
	type entry struct{ key, line string }
	var msgs []entry
	for _, f := range files {
		doc, err := readSchema(f)
		if err != nil {
			return err
		}
		s, err := newSchema(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		version, release, typ := "D", "", ""
		if base := filepath.Base(f); strings.HasPrefix(base, "EFACT_") {
			parts := strings.Split(strings.TrimSuffix(base, ".xsd.gz"), "_") // EFACT D95B BAPLIE
			if len(parts) != 3 || len(parts[1]) != 4 {
				return fmt.Errorf("%s: unexpected file name", f)
			}
			version, release, typ = parts[1][:1], parts[1][1:], parts[2]
		} else {
			release, typ = "3", "CONTRL" // CONTRL D:3:UN, ISO 9735 syntax version 3
		}
		tree, err := t.tree(s, s.root.find("sequence"), true)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		msgs = append(msgs, entry{version + release + " " + typ, fmt.Sprintf("M %s %s %s %s", version, release, typ, tree)})
	}
	sort.Slice(msgs, func(i, j int) bool { return msgs[i].key < msgs[j].key })
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	fmt.Fprintf(w, "# UN/EDIFACT message directory tables for package directory. Generated by gen/main.go; do not edit.\n")
	fmt.Fprintf(w, "# Source: github.com/microsoft/Integration, BizTalk Server/Schema/EDIFACT, commit d6c9b399f27ccd27379460e8f7983fdcdc64166e,\n")
	fmt.Fprintf(w, "# as copied to shared/corpus/edifact-directory (%d schemas). Copyright (c) Microsoft Corporation, MIT licence (see NOTICE).\n", len(files))
	fmt.Fprintf(w, "# L <id> <codes>: a code list. S <id> <TAG> <elements>: a segment, [M|C]<element>:<an|n|a><min>-<max> or :L<code list>,\n")
	fmt.Fprintf(w, "# composites [M|C]<Cnnn>(<components>). M <version> <release> <type> <table>: <segment>/<min>/<max>, groups [ ... ]/<min>/<max>, max 0 = unbounded.\n")
	for i, c := range t.codes {
		fmt.Fprintf(w, "L %d %s\n", i, c)
	}
	for i, s := range t.segs {
		fmt.Fprintf(w, "S %d %s\n", i, s)
	}
	for _, m := range msgs {
		fmt.Fprintln(w, m.line)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	data := buf.Bytes()
	if strings.HasSuffix(out, ".gz") {
		var z bytes.Buffer
		zw, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
		if err != nil {
			return err
		}
		zw.Write(data)
		if err := zw.Close(); err != nil {
			return err
		}
		data = z.Bytes()
	}
	log.Printf("%d messages, %d segments, %d code lists: %d bytes, %d written", len(msgs), len(t.segs), len(t.codes), buf.Len(), len(data))
	return os.WriteFile(out, data, 0o644)
}
