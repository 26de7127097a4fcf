package validate

import (
	"unsafe"

	"github.com/lazaret/lazaret/edifact"
)

// Field is one value taken out of a message, with where it stands:
// Segment is 1-based in the message (UNH = 1), Element and Component as
// CONTRL counts them, Offset the byte in the interchange.
type Field struct {
	Value     string `json:"value"`
	Segment   int    `json:"segment"`
	Tag       string `json:"tag"`
	Element   int    `json:"element"`
	Component int    `json:"component,omitempty"`
	Offset    int64  `json:"offset"`
}

// Party is a NAD segment: its function (code list 3035) and identification.
type Party struct {
	Qualifier Field `json:"qualifier"`
	ID        Field `json:"id"`
}

// Location is a LOC segment: its function (3227) and place, with the code
// list (1131) and agency (3055) that say whether it is a UN/LOCODE.
type Location struct {
	Qualifier Field  `json:"qualifier"`
	Code      Field  `json:"code"`
	CodeList  string `json:"code_list,omitempty"`
	Agency    string `json:"agency,omitempty"`
}

// Equipment is an EQD segment for a container (8053 = CN), with the
// verified gross masses that follow it.
type Equipment struct {
	Number   Field    `json:"number"`
	SizeType Field    `json:"size_type"`
	VGM      []Weight `json:"vgm,omitempty"`
}

// Weight is a MEA segment: purpose (6311), dimension (6313), unit and value.
type Weight struct {
	Purpose   string     `json:"purpose"`
	Dimension string     `json:"dimension"`
	Unit      string     `json:"unit"`
	Value     Field      `json:"value"`
	Equipment *Equipment `json:"-"` // the container it follows, if any
}

// Date is a DTM segment: qualifier (2005), value and format (2379).
type Date struct {
	Qualifier string `json:"qualifier"`
	Value     Field  `json:"value"`
	Format    string `json:"format"`
}

// MessageView is what the logistics rules need from a message (IFTMIN,
// IFCSUM, COPRAR, CODECO, BAPLIE, CUSCAR, IFTSTA, VERMAS and the like),
// every value with its position.
type MessageView struct {
	Ref       string       `json:"ref"`
	Type      string       `json:"type"`
	Offset    int64        `json:"offset"`
	Document  *Field       `json:"document,omitempty"` // BGM document number (C106/1004); nil without BGM
	Name      string       `json:"document_name,omitempty"`
	Parties   []Party      `json:"parties,omitempty"`
	Locations []Location   `json:"locations,omitempty"`
	Equipment []*Equipment `json:"equipment,omitempty"`
	Weights   []Weight     `json:"weights,omitempty"`
	HSCodes   []Field      `json:"hs_codes,omitempty"` // PIA codes of item type HS
	Dates     []Date       `json:"dates,omitempty"`
}

// ViewOf extracts the view of a message. Its values are cut from one
// buffer per message (see viewText), not allocated one by one.
func ViewOf(m *edifact.Message) *MessageView {
	var vs viewScratch
	vs.begin(m)
	for i, s := range m.All() {
		vs.add(i, s)
	}
	vs.end()
	return &vs.v
}

// viewScratch is a view being built and the containers it points to.
type viewScratch struct {
	v       MessageView
	doc     Field
	eqs     []Equipment // v.Equipment points into it
	t       viewText    // the values of the message being read
	current *Equipment  // the container the segments being read follow
}

// begin starts the view of m; add then takes each of m's segments in
// turn, and end finishes it.
func (vs *viewScratch) begin(m *edifact.Message) {
	vs.v = MessageView{Ref: m.Ref, Type: m.Type, Offset: m.Offset}
	vs.t.b = make([]byte, 0, 128) // the values of a typical IFTMIN or VERMAS
}

// field is value e:c of s, segment i (0-based) of the message, with its
// position.
func (vs *viewScratch) field(i int, s *edifact.Segment, e, c int) Field {
	b, off := s.ValueBytesOffset(e, c, vs.t.esc)
	return Field{Value: vs.t.str(b), Segment: i + 1, Tag: s.Tag, Element: e, Component: c, Offset: off}
}

// add takes s, segment i (0-based) of the message, into the view.
func (vs *viewScratch) add(i int, s *edifact.Segment) {
	v, t := &vs.v, &vs.t
	switch s.Tag {
	case "BGM":
		vs.doc = vs.field(i, s, 2, 1)
		v.Document, v.Name = &vs.doc, t.value(s, 1, 1)
	case "NAD":
		v.Parties = append(v.Parties, Party{Qualifier: vs.field(i, s, 1, 1), ID: vs.field(i, s, 2, 1)})
	case "LOC":
		v.Locations = append(v.Locations, Location{Qualifier: vs.field(i, s, 1, 1), Code: vs.field(i, s, 2, 1), CodeList: t.value(s, 2, 2), Agency: t.value(s, 2, 3)})
	case "EQD":
		vs.current = nil
		if s.ValueIs(1, 1, "CN") {
			if len(vs.eqs) == cap(vs.eqs) {
				// A new array: the *Equipment taken so far point into the old one.
				vs.eqs = make([]Equipment, 0, max(4, 2*cap(vs.eqs)))
			}
			vs.eqs = vs.eqs[:len(vs.eqs)+1]
			current := &vs.eqs[len(vs.eqs)-1]
			*current = Equipment{Number: vs.field(i, s, 2, 1), SizeType: vs.field(i, s, 3, 1), VGM: current.VGM[:0]}
			v.Equipment = append(v.Equipment, current)
			vs.current = current
		}
	case "MEA":
		w := Weight{Purpose: t.value(s, 1, 1), Dimension: t.value(s, 2, 1), Unit: t.value(s, 3, 1), Value: vs.field(i, s, 3, 2), Equipment: vs.current}
		v.Weights = append(v.Weights, w)
		if vs.current != nil && w.Purpose == "AAE" && w.Dimension == "VGM" {
			vs.current.VGM = append(vs.current.VGM, w)
		}
	case "PIA":
		for e := 2; e <= s.Elements(); e++ {
			if s.ValueIs(e, 2, "HS") && !s.ValueIs(e, 1, "") {
				v.HSCodes = append(v.HSCodes, vs.field(i, s, e, 1))
			}
		}
	case "DTM":
		v.Dates = append(v.Dates, Date{Qualifier: t.value(s, 1, 1), Value: vs.field(i, s, 1, 2), Format: t.value(s, 1, 3)})
	}
}

// end finishes the view.
func (vs *viewScratch) end() {
	vs.current = nil
}

// viewText holds the values of one message's view end to end. A value
// is a string of bytes b holds: bytes appended later never move them (a
// b that grows is a new array, the old one stays as it is).
type viewText struct {
	b   []byte
	esc []byte // a value with release characters, unescaped
}

// value is s.Value(e, c), cut from t.
func (t *viewText) value(s *edifact.Segment, e, c int) string {
	return t.str(s.ValueBytes(e, c, t.esc))
}

// str is b, cut from t.
func (t *viewText) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	n := len(t.b)
	t.b = append(t.b, b...)
	return unsafe.String(&t.b[n], len(b))
}
