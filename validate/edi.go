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
	// MaxRetainedBytes bounds what is kept of an interchange's messages
	// until its envelope's verdict is known; 0 means
	// DefaultMaxRetainedBytes.
	MaxRetainedBytes int64
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
// message, through its view (see ViewOf). All problems come back joined,
// structural first, then regulatory, then semantic; warnings are things
// worth a look that do not fail the message.
func CheckMessage(m *edifact.Message, regs *Registries, rules EDIRules) (warnings []Warning, err error) {
	v := ViewOf(m)
	var errs []*RuleError
	add := func(f Field, tier Tier, code string, syntax int, registry string, format string, args ...any) {
		errs = append(errs, &RuleError{Tier: tier, Code: code, Syntax: syntax, Message: m.Ref, Segment: f.Segment, Tag: f.Tag,
			Element: f.Element, Component: f.Component, Offset: f.Offset, Registry: registry, Reason: fmt.Sprintf(format, args...)})
	}
	if m.Charset != nil {
		msg := fmt.Sprintf("byte 0x%02x at %d is outside the declared character repertoire", m.Charset.Byte, m.Charset.Offset)
		if rules.StrictCharset {
			add(Field{Segment: m.Charset.Segment, Offset: m.Charset.Offset}, TierSemantic, "edifact.charset", edifact.CodeInvalidCharacter, "", "%s", msg)
		} else {
			off := m.Charset.Offset
			warnings = append(warnings, Warning{Code: "edifact.charset", Message: fmt.Sprintf("message %s: %s", m.Ref, msg), Offset: &off})
		}
	}
	if v.Document == nil && !messagesWithoutBGM[m.Type] {
		f := Field{Segment: 2, Tag: "BGM", Offset: m.Offset}
		if len(m.Segments) > 1 {
			f.Offset = m.Segments[1].Offset
		}
		add(f, TierStructural, "edifact.bgm.missing", edifact.CodeMissing, "", "mandatory BGM (beginning of message) missing")
	}
	seen := map[string]bool{}
	var named []string
	for _, p := range v.Parties {
		if p.Qualifier.Value == "" {
			add(p.Qualifier, TierSemantic, "edifact.nad.qualifier-missing", edifact.CodeMissing, "", "NAD without a party function qualifier (3035)")
			continue
		}
		if !seen[p.Qualifier.Value] {
			named = append(named, partyName(p.Qualifier.Value))
		}
		seen[p.Qualifier.Value] = true
	}
	for _, q := range rules.RequiredParties[m.Type] {
		if seen[q] {
			continue
		}
		f := Field{Segment: 1, Tag: "NAD", Offset: m.Offset}
		if len(v.Parties) > 0 {
			f = v.Parties[len(v.Parties)-1].Qualifier
		}
		add(f, TierSemantic, "edifact.party.missing", edifact.CodeMissing, "", "%s requires a %s; the message names %s",
			m.Type, partyName(q), strings.Join(orNone(named), ", "))
	}
	for _, l := range v.Locations {
		declared := l.CodeList == "139" || l.Agency == "6"
		code := l.Code.Value
		if !declared && (l.CodeList != "" || l.Agency != "" || !IsLOCODE(code)) {
			continue // a terminal, berth or national code: not a UN/LOCODE
		}
		switch {
		case code == "":
			add(l.Code, TierSemantic, "edifact.locode.missing", edifact.CodeMissing, "", "LOC declares a UN/LOCODE but carries none")
		case !IsLOCODE(code):
			add(l.Code, TierSemantic, "edifact.locode.malformed", edifact.CodeInvalidValue, "", "%q is not a UN/LOCODE (country + 3 of A-Z, 2-9)", code)
		case !regs.LOCODE.Has(code):
			add(l.Code, TierSemantic, "edifact.locode.unknown", edifact.CodeInvalidValue, regs.LOCODE.Version(), "UN/LOCODE %s is not in the registry", code)
		}
	}
	for _, eq := range v.Equipment {
		if looksLikeContainer(eq.Number.Value) {
			if err := CheckContainer(eq.Number.Value); err != nil {
				add(eq.Number, TierSemantic, "edifact.container.check-digit", edifact.CodeInvalidValue, "", "%v", err)
			}
		}
		if m.Type == "VERMAS" && len(eq.VGM) == 0 {
			add(eq.Number, TierRegulatory, "edifact.vgm.missing", edifact.CodeMissing, "", "container %s has no verified gross mass (MEA+AAE+VGM)", eq.Number.Value)
		}
	}
	if m.Type == "VERMAS" && len(v.Equipment) == 0 {
		add(Field{Segment: 1, Tag: "EQD", Offset: m.Offset}, TierRegulatory, "edifact.vgm.missing", edifact.CodeMissing, "", "VERMAS declares no container")
	}
	for _, w := range v.Weights {
		if w.Dimension != "VGM" {
			continue
		}
		kg, err := massKg(w.Unit, w.Value.Value)
		if err != nil {
			add(w.Value, TierRegulatory, "edifact.vgm.invalid", edifact.CodeInvalidValue, "", "VGM %v", err)
			continue
		}
		floor, ceil, size := rules.VGMFloorKg, rules.VGMMaxKg, "unknown size"
		if w.Equipment != nil {
			if f, c, ok := sizeLimits(w.Equipment.SizeType.Value); ok {
				floor, ceil, size = f, c, w.Equipment.SizeType.Value
			}
		}
		if kg < floor || kg > ceil {
			add(w.Value, TierRegulatory, "edifact.vgm.implausible", edifact.CodeInvalidValue, "",
				"VGM %.0f kg is outside %.0f..%.0f kg for %s (SOLAS VI/2)", kg, floor, ceil, size)
		}
	}
	for _, hs := range v.HSCodes {
		code := hs.Value
		switch {
		case !isDigits(code) || len(code) < 2 || len(code) > 10:
			add(hs, TierRegulatory, "edifact.hs.malformed", edifact.CodeInvalidValue, "", "HS code %q is not 2-10 digits", code)
		case !regs.HS.Has(code[:min(len(code), 6)]):
			add(hs, TierRegulatory, "edifact.hs.unknown", edifact.CodeInvalidValue, regs.HS.Version(),
				"HS code %s (subheading %s) is not in the active tariff registry", code, code[:min(len(code), 6)])
		}
	}
	for _, d := range v.Dates {
		if d.Value.Value != "" && !validDate(d.Value.Value, d.Format) {
			add(d.Value, TierSemantic, "edifact.dtm.invalid", edifact.CodeInvalidValue, "", "date %q does not match format %s", d.Value.Value, d.Format)
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
