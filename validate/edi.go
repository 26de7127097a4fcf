package validate

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lazaret/lazaret/edifact"
)

// Tier is the validation tier a logistics rule belongs to; it decides the
// route (structural: dead-letter the interchange; semantic and regulatory:
// quarantine the message).
type Tier string

const (
	TierStructural Tier = "structural"
	TierSemantic   Tier = "semantic"
	TierRegulatory Tier = "regulatory"
)

// RuleError is one logistics rule a message breaks, with its position:
// Segment is 1-based in the message (UNH = 1), Element and Component as
// CONTRL counts them, Offset the byte in the interchange.
type RuleError struct {
	Tier      Tier
	Code      string // e.g. "edifact.locode.unknown"
	Syntax    int    // 0085 code when there is one (13 missing, 12 invalid value)
	Message   string // the message reference (UNH 0062)
	Segment   int
	Tag       string
	Element   int
	Component int
	Offset    int64
	Registry  string // registry version the rule checked against
	Reason    string
}

func (e *RuleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: message %s segment %d (%s)", e.Tier, e.Message, e.Segment, e.Tag)
	if e.Element > 0 {
		fmt.Fprintf(&b, " element %d", e.Element)
		if e.Component > 0 {
			fmt.Fprintf(&b, ":%d", e.Component)
		}
	}
	fmt.Fprintf(&b, " at byte %d: %s", e.Offset, e.Reason)
	if e.Registry != "" {
		fmt.Fprintf(&b, " (checked against %s)", e.Registry)
	}
	return b.String()
}

// EDIRules are the logistics policy.
type EDIRules struct {
	// VGMFloorKg and VGMMaxKg bound a plausible verified gross mass when the
	// container's size is unknown; by size: 20 ft 1800..30480 kg, 40 ft
	// 3500..32500 kg, 45 ft 3800..34000 kg (tare floor, maximum gross).
	VGMFloorKg, VGMMaxKg float64
	// StrictCharset quarantines messages with characters outside the
	// declared syntax identifier's repertoire instead of warning.
	StrictCharset bool
	// RequiredParties lists the NAD party qualifiers (code list 3035) a
	// message type must carry.
	RequiredParties map[string][]string
}

// DefaultEDIRules: VGM 1500..40000 kg for unknown sizes, charset warnings,
// IFTMIN and IFCSUM need a consignor (CZ) and a consignee (CN).
func DefaultEDIRules() EDIRules {
	return EDIRules{VGMFloorKg: 1500, VGMMaxKg: 40000,
		RequiredParties: map[string][]string{"IFTMIN": {"CZ", "CN"}, "IFCSUM": {"CZ", "CN"}}}
}

// partyNames are the code list 3035 qualifiers the rules talk about.
var partyNames = map[string]string{
	"CZ": "consignor", "CN": "consignee", "CX": "consignee's agent", "FW": "freight forwarder",
	"CA": "carrier", "CG": "carrier's agent", "MS": "message sender", "MR": "message recipient",
}

func partyName(q string) string {
	if n, ok := partyNames[q]; ok {
		return fmt.Sprintf("%s (%s)", n, q)
	}
	return q
}

// messagesWithoutBGM are message types that have no BGM segment.
var messagesWithoutBGM = map[string]bool{"CONTRL": true, "PAORES": true}

// CheckMessage applies the structural, semantic and regulatory rules to one
// message. All problems come back joined, structural first, then
// regulatory, then semantic; warnings are things worth a look that do not
// fail the message.
func CheckMessage(m *edifact.Message, regs *Registries, rules EDIRules) (warnings []Warning, err error) {
	var errs []*RuleError
	at := func(i int, s *edifact.Segment, e, c int) *RuleError {
		off := s.Offset
		if e > 0 {
			off = s.ValueOffset(e, max(c, 1))
		}
		return &RuleError{Message: m.Ref, Segment: i + 1, Tag: s.Tag, Element: e, Component: c, Offset: off}
	}
	add := func(r *RuleError, tier Tier, code string, syntax int, format string, args ...any) {
		r.Tier, r.Code, r.Syntax, r.Reason = tier, code, syntax, fmt.Sprintf(format, args...)
		errs = append(errs, r)
	}
	if m.Charset != nil {
		msg := fmt.Sprintf("byte 0x%02x at %d is outside the declared character repertoire", m.Charset.Byte, m.Charset.Offset)
		if rules.StrictCharset {
			errs = append(errs, &RuleError{Tier: TierSemantic, Code: "edifact.charset", Syntax: edifact.CodeInvalidCharacter, Message: m.Ref,
				Segment: m.Charset.Segment, Offset: m.Charset.Offset, Reason: msg})
		} else {
			off := m.Charset.Offset
			warnings = append(warnings, Warning{Code: "edifact.charset", Message: fmt.Sprintf("message %s: %s", m.Ref, msg), Offset: &off})
		}
	}
	hasBGM := false
	parties := map[string]int{}
	var partyOrder []string
	type equipment struct {
		seg    int
		number string
		size   string
		vgm    bool
		s      *edifact.Segment
	}
	var eqd []*equipment
	for i := range m.Segments {
		s := &m.Segments[i]
		switch s.Tag {
		case "BGM":
			hasBGM = true
		case "NAD":
			q := s.Value(1, 1)
			if q == "" {
				add(at(i, s, 1, 1), TierSemantic, "edifact.nad.qualifier-missing", edifact.CodeMissing, "NAD without a party function qualifier (3035)")
				continue
			}
			if _, seen := parties[q]; !seen {
				partyOrder = append(partyOrder, q)
			}
			parties[q] = i
		case "LOC":
			code, list, agency := s.Value(2, 1), s.Value(2, 2), s.Value(2, 3)
			declared := list == "139" || agency == "6"
			if !declared && (list != "" || agency != "" || !IsLOCODE(code)) {
				continue // a terminal, berth or national code: not a UN/LOCODE
			}
			switch {
			case code == "":
				add(at(i, s, 2, 1), TierSemantic, "edifact.locode.missing", edifact.CodeMissing, "LOC declares a UN/LOCODE but carries none")
			case !IsLOCODE(code):
				add(at(i, s, 2, 1), TierSemantic, "edifact.locode.malformed", edifact.CodeInvalidValue, "%q is not a UN/LOCODE (country + 3 of A-Z, 2-9)", code)
			case !regs.LOCODE.Has(code):
				r := at(i, s, 2, 1)
				r.Registry = regs.LOCODE.Version()
				add(r, TierSemantic, "edifact.locode.unknown", edifact.CodeInvalidValue, "UN/LOCODE %s is not in the registry", code)
			}
		case "EQD":
			if s.Value(1, 1) != "CN" {
				continue
			}
			n := s.Value(2, 1)
			eqd = append(eqd, &equipment{seg: i, number: n, size: s.Value(3, 1), s: s})
			if looksLikeContainer(n) {
				if err := CheckContainer(n); err != nil {
					add(at(i, s, 2, 1), TierSemantic, "edifact.container.check-digit", edifact.CodeInvalidValue, "%v", err)
				}
			}
		case "MEA":
			if s.Value(1, 1) != "AAE" || s.Value(2, 1) != "VGM" {
				continue
			}
			var eq *equipment
			if len(eqd) > 0 {
				eq = eqd[len(eqd)-1]
				eq.vgm = true
			}
			kg, err := massKg(s.Value(3, 1), s.Value(3, 2))
			if err != nil {
				add(at(i, s, 3, 2), TierRegulatory, "edifact.vgm.invalid", edifact.CodeInvalidValue, "VGM %v", err)
				continue
			}
			floor, ceil, size := rules.VGMFloorKg, rules.VGMMaxKg, "unknown size"
			if eq != nil {
				if f, c, ok := sizeLimits(eq.size); ok {
					floor, ceil, size = f, c, eq.size
				}
			}
			if kg < floor || kg > ceil {
				add(at(i, s, 3, 2), TierRegulatory, "edifact.vgm.implausible", edifact.CodeInvalidValue,
					"VGM %.0f kg is outside %.0f..%.0f kg for %s (SOLAS VI/2)", kg, floor, ceil, size)
			}
		case "PIA":
			for e := 2; e <= s.Elements(); e++ {
				code, kind := s.Value(e, 1), s.Value(e, 2)
				if kind != "HS" || code == "" {
					continue
				}
				r := at(i, s, e, 1)
				switch {
				case !isDigits(code) || len(code) < 2 || len(code) > 10:
					add(r, TierRegulatory, "edifact.hs.malformed", edifact.CodeInvalidValue, "HS code %q is not 2-10 digits", code)
				case !regs.HS.Has(code[:min(len(code), 6)]):
					r.Registry = regs.HS.Version()
					add(r, TierRegulatory, "edifact.hs.unknown", edifact.CodeInvalidValue, "HS code %s (subheading %s) is not in the active tariff registry", code, code[:min(len(code), 6)])
				}
			}
		case "DTM":
			if v, f := s.Value(1, 2), s.Value(1, 3); v != "" && !validDate(v, f) {
				add(at(i, s, 1, 2), TierSemantic, "edifact.dtm.invalid", edifact.CodeInvalidValue, "date %q does not match format %s", v, f)
			}
		}
	}
	if !hasBGM && !messagesWithoutBGM[m.Type] {
		s := &m.Segments[0]
		r := &RuleError{Message: m.Ref, Segment: 2, Tag: "BGM", Offset: s.Offset}
		if len(m.Segments) > 1 {
			r.Offset = m.Segments[1].Offset
		}
		add(r, TierStructural, "edifact.bgm.missing", edifact.CodeMissing, "mandatory BGM (beginning of message) missing")
	}
	for _, q := range rules.RequiredParties[m.Type] {
		if _, ok := parties[q]; ok {
			continue
		}
		r := &RuleError{Message: m.Ref, Segment: 1, Tag: "NAD", Offset: m.Offset}
		found := []string{}
		for _, other := range partyOrder {
			found = append(found, partyName(other))
		}
		if len(partyOrder) > 0 {
			i := parties[partyOrder[len(partyOrder)-1]]
			r = at(i, &m.Segments[i], 1, 1)
		}
		add(r, TierSemantic, "edifact.party.missing", edifact.CodeMissing, "%s requires a %s; the message names %s",
			m.Type, partyName(q), strings.Join(orNone(found), ", "))
	}
	if m.Type == "VERMAS" {
		if len(eqd) == 0 {
			add(&RuleError{Message: m.Ref, Segment: 1, Tag: "EQD", Offset: m.Offset}, TierRegulatory, "edifact.vgm.missing", edifact.CodeMissing,
				"VERMAS declares no container")
		}
		for _, eq := range eqd {
			if !eq.vgm {
				add(at(eq.seg, eq.s, 2, 1), TierRegulatory, "edifact.vgm.missing", edifact.CodeMissing,
					"container %s has no verified gross mass (MEA+AAE+VGM)", eq.number)
			}
		}
	}
	rank := map[Tier]int{TierStructural: 0, TierRegulatory: 1, TierSemantic: 2}
	sort.SliceStable(errs, func(i, j int) bool { return rank[errs[i].Tier] < rank[errs[j].Tier] })
	joined := make([]error, len(errs))
	for i, e := range errs {
		joined[i] = e
	}
	return warnings, errors.Join(joined...)
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"no parties"}
	}
	return s
}

func looksLikeContainer(s string) bool {
	if len(s) != 11 {
		return false
	}
	for i := 0; i < 4; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return isDigits(s[4:])
}

// sizeLimits maps an ISO 6346 size-type code's length character to the
// tare floor and maximum gross mass.
func sizeLimits(code string) (floor, ceil float64, ok bool) {
	if code == "" {
		return 0, 0, false
	}
	switch code[0] {
	case '2':
		return 1800, 30480, true
	case '4':
		return 3500, 32500, true
	case 'L':
		return 3800, 34000, true
	}
	return 0, 0, false
}

func massKg(unit, value string) (float64, error) {
	v, err := strconv.ParseFloat(strings.Replace(value, ",", ".", 1), 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not a number", value)
	}
	switch unit {
	case "KGM":
		return v, nil
	case "LBR":
		return v * 0.45359237, nil
	case "TNE":
		return v * 1000, nil
	}
	return 0, fmt.Errorf("unit %q is not KGM, LBR or TNE", unit)
}

func validDate(v, format string) bool {
	layouts := map[string]string{"102": "20060102", "203": "200601021504", "201": "0601021504", "101": "060102", "204": "20060102150405"}
	l, ok := layouts[format]
	if !ok {
		return true // a format the rules do not check
	}
	_, err := time.Parse(l, v)
	return err == nil && len(v) == len(l)
}
