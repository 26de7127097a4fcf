package validate

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/internal/testenv"
)

// checkByView is CheckMessage as it was before ruleCheck: the view built
// whole (ViewOf's), then each rule run over it. It is the reference
// ruleCheck is held to: the same problems, the same positions, the same
// order.
func checkByView(m *edifact.Message, regs *Registries, rules EDIRules) (warnings []Warning, err error) {
	mc := messageChecks.New().(*messageCheck)
	mc.dirWarnings, mc.checkDir = mc.beginDirectory(m, &rules)
	var vs viewScratch
	vs.begin(m)
	var second int64
	for i, s := range m.All() {
		if i == 1 {
			second = s.Offset
		}
		vs.add(i, s)
		if mc.checkDir {
			mc.checker.Segment(i, s)
		}
	}
	vs.end()
	dirWarnings := mc.dirWarnings
	if mc.checkDir {
		mc.checker.End()
		dirWarnings = mc.dir.end()
	}
	v := &vs.v
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
	un, cs := unRules(m), edifact.CharsetOf(m.SyntaxID)
	if !un {
		v = new(MessageView) // another agency's message: no rule reads its segments
	}
	if un && v.Document == nil && !messagesWithoutBGM[m.Type] {
		f := Field{Segment: 2, Tag: "BGM", Offset: m.Offset}
		if m.Len() > 1 {
			f.Offset = second
		}
		add(f, TierStructural, "edifact.bgm.missing", edifact.CodeMissing, "", "mandatory BGM (beginning of message) missing")
	}
	for _, p := range v.Parties {
		if p.Qualifier.Value == "" {
			add(p.Qualifier, TierSemantic, "edifact.nad.qualifier-missing", edifact.CodeMissing, "", "NAD without a party function qualifier (3035)")
		}
	}
	for _, q := range rules.RequiredParties[m.Type] {
		if !un {
			break
		}
		if names(v.Parties, q) {
			continue
		}
		f := Field{Segment: 1, Tag: "NAD", Offset: m.Offset}
		if len(v.Parties) > 0 {
			f = v.Parties[len(v.Parties)-1].Qualifier
		}
		add(f, TierSemantic, "edifact.party.missing", edifact.CodeMissing, "", "%s requires a %s; the message names %s",
			m.Type, partyName(q), strings.Join(orNone(namedParties(cs, v.Parties)), ", "))
	}
	for _, l := range v.Locations {
		declared := l.CodeList == "139" || l.Agency == "6"
		code := l.Code.Value
		if !declared && (l.CodeList != "" || l.Agency != "" || !IsLOCODE(code)) {
			continue
		}
		switch {
		case code == "":
			add(l.Code, TierSemantic, "edifact.locode.missing", edifact.CodeMissing, "", "LOC declares a UN/LOCODE but carries none")
		case !IsLOCODE(code):
			add(l.Code, TierSemantic, "edifact.locode.malformed", edifact.CodeInvalidValue, "", "%s is not a UN/LOCODE (country + 3 of A-Z, 2-9)", cs.Quote([]byte(code)))
		case !regs.LOCODE.Has(code):
			add(l.Code, TierSemantic, "edifact.locode.unknown", edifact.CodeInvalidValue, regs.LOCODE.Version(), "UN/LOCODE %s is not in the registry", code)
		}
	}
	for _, eq := range v.Equipment {
		if eq.Number.Value != "" {
			if err := CheckContainer(eq.Number.Value); err != nil {
				add(eq.Number, TierSemantic, "edifact.container.check-digit", edifact.CodeInvalidValue, "", "%v", err)
			}
		}
		if m.Type == "VERMAS" && len(eq.VGM) == 0 {
			add(eq.Number, TierRegulatory, "edifact.vgm.missing", edifact.CodeMissing, "", "container %s has no verified gross mass (MEA+AAE+VGM)", eq.Number.Value)
		}
	}
	if un && m.Type == "VERMAS" && len(v.Equipment) == 0 {
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
			add(hs, TierRegulatory, "edifact.hs.malformed", edifact.CodeInvalidValue, "", "HS code %s is not 2-10 digits", cs.Quote([]byte(code)))
		case !regs.HS.Has(code[:min(len(code), 6)]):
			add(hs, TierRegulatory, "edifact.hs.unknown", edifact.CodeInvalidValue, regs.HS.Version(),
				"HS code %s (subheading %s) is not in the active tariff registry", code, code[:min(len(code), 6)])
		}
	}
	for _, d := range v.Dates {
		if d.Value.Value != "" && !validDate(d.Value.Value, d.Format) {
			add(d.Value, TierSemantic, "edifact.dtm.invalid", edifact.CodeInvalidValue, "", "date %s does not match format %s", cs.Quote([]byte(d.Value.Value)), cs.Text([]byte(d.Format)))
		}
	}
	errs = capByRule(errs, rules.Directory.MaxFindings)
	errs = append(errs, mc.rejects...)
	if warnings == nil {
		warnings = dirWarnings
	} else {
		warnings = append(warnings, dirWarnings...)
	}
	if len(errs) == 0 {
		return warnings, nil
	}
	slices.SortStableFunc(errs, func(a, b *RuleError) int { return a.Tier.rank() - b.Tier.rank() })
	joined := make([]error, len(errs))
	for i, e := range errs {
		joined[i] = e
	}
	return warnings, errors.Join(joined...)
}

// ruleOfCode is the rule (ruleCheck's list) each capped code is found by.
var ruleOfCode = map[string]string{
	"edifact.nad.qualifier-missing": "nad",
	"edifact.locode.missing":        "loc", "edifact.locode.malformed": "loc", "edifact.locode.unknown": "loc",
	"edifact.container.check-digit": "eqd", "edifact.vgm.missing": "eqd",
	"edifact.vgm.invalid": "mea", "edifact.vgm.implausible": "mea",
	"edifact.hs.malformed": "pia", "edifact.hs.unknown": "pia",
	"edifact.dtm.invalid": "dtm",
}

// capByRule keeps of errs, in order, the first limit (0: 1000) findings
// of each rule and tier, the last kept saying how many more there were,
// as ruleCheck keeps them.
func capByRule(errs []*RuleError, limit int) []*RuleError {
	if limit <= 0 {
		limit = 1000
	}
	type key struct {
		rule string
		tier Tier
	}
	n, last := map[key]int{}, map[key]*RuleError{}
	var out []*RuleError
	for _, e := range errs {
		rule, ok := ruleOfCode[e.Code]
		if !ok {
			out = append(out, e)
			continue
		}
		k := key{rule, e.Tier}
		if n[k]++; n[k] <= limit {
			out, last[k] = append(out, e), e
		}
	}
	for k, c := range n {
		if c > limit {
			last[k].Reason = fmt.Sprintf("%s; and %d more past the limit of %d (edi directory max_findings)", last[k].Reason, c-limit, limit)
		}
	}
	return out
}

// names reports whether parties holds one of function q.
func names(parties []Party, q string) bool {
	for i := range parties {
		if parties[i].Qualifier.Value == q {
			return true
		}
	}
	return false
}

// namedParties names the functions of parties (see shownParty), each
// once, in the order they first occur, the first maxNamed then "and
// others" if there are more; parties without one are left out.
func namedParties(cs *edifact.Charset, parties []Party) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range parties {
		q := p.Qualifier.Value
		if q == "" || seen[q] {
			continue
		}
		if len(out) == maxNamed {
			return append(out, "and others")
		}
		seen[q] = true
		out = append(out, shownParty(cs, q))
	}
	return out
}

// brokenRules is an interchange whose messages break every rule ruleCheck
// applies, some values behind release characters, two of them in one
// segment. Its directory findings are structural under the default rules;
// under lenientRules it is sound, and compared as a whole interchange too.
const brokenRules = "UNA:+.? '" +
	"UNB+UNOC:3+A:ZZ+B:ZZ+261130:1200+R1'" +
	"UNH+1+IFTMIN:D:99B:UN'BGM+610+B?+1+9'DTM+137:20261331:102'DTM+137:2026?:0101:102'DTM+2:1:999'" +
	"LOC+9+XXAAA:139:6'LOC+9+nlrtm:139'LOC+9+::6'LOC+11+NLRTM'LOC+11+NL?+RT'LOC+11+TERM1:ZZZ'LOC+9+XX?AAA:1?39:6'" +
	"NAD++X'NAD+CZ'NAD+C?:N+Y'GID+1+10:CT'PIA+5+84713:HS+9999:HS+ABC:HS+:HS+1?:2:HS+12:H?S+47:HS*X:HS'" +
	"MEA+AAE+VGM+KGM:12'MEA+AAE+VGM+XXX:1200'MEA+AAE+VGM+KGM:1?+2'MEA+AAE+G+KGM:1'MEA+AAE+VGM+K?GM:4?1000'" +
	"EQD+CN+MSKU9070324+22G1:6346:5'MEA+AAE+VGM+KGM:40000'EQD+BB+X'MEA+AAE+VGM+LBR:99999'UNT+27+1'" +
	"UNH+2+VERMAS:D:99B:UN'BGM+749+V2+9'EQD+CN+CSQU3054383+45G1:6346:5'EQD+CN+MSKU9070323+L5G1'" +
	"MEA+AAE+VGM+TNE:40'EQD+CN+ABCU1234560'MEA+AAX+VGM+KGM:1000'UNT+8+2'" +
	"UNH+3+VERMAS:D:99B:UN'BGM+749+V3+9'NAD+TB+X'UNT+4+3'" +
	"UNH+4+COPRAR:D:95B:UN'BGM+45+C6+9'NAD+CA+MSC'LOC+9+DEHAM:139:6'PIA+5+0101:HS'UNT+6+4'" +
	"UNZ+4+R1'"

// missingBGM's messages have no BGM: structural, whatever the rules.
const missingBGM = "UNB+UNOC:3+A:ZZ+B:ZZ+261130:1200+R4'" +
	"UNH+1+IFTMIN:D:99B:UN'DTM+137:20260101:102'UNT+3+1'" +
	"UNH+2+IFTMIN:D:99B:UN'UNT+2+2'" +
	"UNZ+2+R4'"

// repeatedRules is a sound interchange of three messages alike, each
// with segments that pass and fail, some twice in a row: what failed in
// the first must fail in the next as it did, what passed must pass. Its
// containers come by turns: MSKU9070323 (45 ft: 31,000 kg is within its
// limits, not a 20 ft's) with a mass, CSQU3054383 (20 ft) with none, then
// MSKU9070323 again, whose EQD passed before, with the mass: the mass is
// its, and CSQU3054383 still has none.
const repeatedRules = "UNB+UNOC:3+A:ZZ+B:ZZ+261130:1200+R3'" +
	"UNH+1" + repeatedBody + "1'" + "UNH+2" + repeatedBody + "2'" + "UNH+3" + repeatedBody + "3'" + "UNZ+3+R3'"

const repeatedBody = "+VERMAS:D:99B:UN'BGM+749+V+9'DTM+137:20260101:102'DTM+137:20260101:102'DTM+137:20261331:102'DTM+137:20261331:102'" +
	"LOC+9+NLRTM:139:6'LOC+9+NLRTM:139:6'LOC+9+XXAAA:139:6'LOC+9+XXAAA:139:6'PIA+5+847130:HS'PIA+5+847130:HS'PIA+5+1:HS'PIA+5+1:HS'" +
	"EQD+CN+MSKU9070323+45G1'MEA+AAE+VGM+KGM:31000'EQD+CN+CSQU3054383+22G1'EQD+CN+MSKU9070323+45G1'MEA+AAE+VGM+KGM:31000'" +
	"EQD+CN+MSKU9070324+22G1'MEA+AAE+VGM+KGM:24000'EQD+CN+MSKU9070324+22G1'MEA+AAE+VGM+KGM:24000'UNT+24+"

// repeatedElements has data elements in repetitions (syntax version 4):
// only the first of each is read for an HS code.
const repeatedElements = "UNA:+.?*'UNB+UNOC:4+A:ZZ+B:ZZ+20261130:1200+R5'" +
	"UNH+1+VERMAS:D:99B:UN'BGM+749+V+9'PIA+5+1:ZZ*2:HS+847130:HS*3:HS*:HS'EQD+CN+MSKU9070323+45G1'MEA+AAE+VGM+KGM:31000'UNT+6+1'" +
	"UNZ+1+R5'"

// brokenCharset's message has a byte outside its repertoire (UNOA has no
// lower case), which the rules warn of, or fail it for.
const brokenCharset = "UNB+UNOA:3+A:ZZ+B:ZZ+261130:1200+R2'" +
	"UNH+1+IFTMIN:D:99B:UN'BGM+610+b1+9'NAD+CZ+S'NAD+CN+R'UNT+5+1'UNZ+1+R2'"

// builtInRuleInputs are the interchanges above and the repository's
// logistics fixtures.
// containerNumbers is ISO 6346 numbers that fail one part each: 10
// characters, a digit in the owner code, a letter in the serial, the
// check digit, and a control character; one passes.
const containerNumbers = "UNB+UNOC:3+A:ZZ+B:ZZ+261130:1200+R3'" +
	"UNH+1+VERMAS:D:16A:UN'BGM+749'EQD+CN+CSQU305438+45G1:6346:5'MEA+AAE+VGM+KGM:20000'UNT+5+1'" +
	"UNH+2+VERMAS:D:16A:UN'BGM+749'EQD+CN+C5QU3054383+45G1:6346:5'MEA+AAE+VGM+KGM:20000'UNT+5+2'" +
	"UNH+3+VERMAS:D:16A:UN'BGM+749'EQD+CN+CSQU30543A3+45G1:6346:5'MEA+AAE+VGM+KGM:20000'UNT+5+3'" +
	"UNH+4+VERMAS:D:16A:UN'BGM+749'EQD+CN+CSQU3054384+45G1:6346:5'MEA+AAE+VGM+KGM:20000'UNT+5+4'" +
	"UNH+5+VERMAS:D:16A:UN'BGM+749'EQD+CN+CSQU\x1b054383+45G1:6346:5'MEA+AAE+VGM+KGM:20000'UNT+5+5'" +
	"UNH+6+VERMAS:D:16A:UN'BGM+749'EQD+CN+CSQU3054383+45G1:6346:5'MEA+AAE+VGM+KGM:20000'UNT+5+6'UNZ+6+R3'"

func builtInRuleInputs(t testing.TB) map[string][]byte {
	in := map[string][]byte{"brokenRules": []byte(brokenRules), "missingBGM": []byte(missingBGM),
		"repeatedRules": []byte(repeatedRules), "brokenCharset": []byte(brokenCharset), "repeatedElements": []byte(repeatedElements),
		"containerNumbers": []byte(containerNumbers)}
	readDir(t, in, filepath.Join(testenv.RepoRoot(t), "fixtures", "logistics"))
	agency, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(t), "validate", "testdata", "agency", "*.edi"))
	for _, p := range agency {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		in[filepath.Base(p)] = b
	}
	in["cyrillicRules"] = []byte(cyrillicRules)
	return in
}

// cyrillicRules is a UNOE (ISO 8859-5) message whose port, HS code, date
// and party function are Cyrillic: each finding shows the value as its
// text.
const cyrillicRules = "UNB+UNOE:3+S+R+261130:1200+1'UNH+1+IFTMIN:D:99B:UN'BGM+610+B1+9'DTM+137:\xb4\xd0:102'" +
	"LOC+9+\xbc\xde\xe1\xda\xd2\xd0:139:6'NAD+\xb4\xb4+S'PIA+5+\xb4\xb4:HS'UNT+7+1'UNZ+1+1'"

// readDir adds the interchanges of dir to in, by name.
func readDir(t testing.TB, in map[string][]byte, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		in[e.Name()] = b
	}
}

// sameAsView fails t unless every message of data checks the same with
// CheckMessage as with checkByView, under rules; it returns how many
// messages it compared and how many failed.
//
// It checks data as an interchange too, as a worker does (one message
// check from the first message to the last, see ruleCheck.passed), and if
// it is sound (whole), holds every message's verdict to the view's.
func sameAsView(t testing.TB, data []byte, rules EDIRules) (messages, failed int, whole bool) {
	regs := Builtin()
	var views []MessageResult
	edifact.Parse(bytes.NewReader(data), edifact.Limits{}, func(m *edifact.Message) error {
		messages++
		w1, e1 := CheckMessage(m, regs, rules)
		w2, e2 := checkByView(m, regs, rules)
		views = append(views, MessageResult{Ref: m.Ref, Warnings: w2, Err: e2})
		if e1 != nil {
			failed++
		}
		if diff := cmp.Diff(w2, w1); diff != "" {
			t.Errorf("message %s: warnings (-view +check):\n%s", m.Ref, diff)
		}
		if diff := cmp.Diff(joinedRules(e2), joinedRules(e1)); diff != "" {
			t.Errorf("message %s: problems (-view +check):\n%s", m.Ref, diff)
		}
		return nil
	})
	path := filepath.Join(t.TempDir(), "interchange.edi")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, res, err := CheckInterchange(t.Context(), path, nil, regs, rules, "")
	if err != nil {
		return messages, failed, false // not sound: no verdicts to compare
	}
	n := 0
	if err := res.EachMessage(t.Context(), func(m MessageResult) error {
		if n >= len(views) {
			return fmt.Errorf("message %s: past the %d the parse found", m.Ref, len(views))
		}
		v := views[n]
		n++
		if diff := cmp.Diff(v.Warnings, m.Warnings); diff != "" {
			t.Errorf("interchange, message %s: warnings (-view +check):\n%s", m.Ref, diff)
		}
		if diff := cmp.Diff(joinedRules(v.Err), joinedRules(m.Err)); diff != "" {
			t.Errorf("interchange, message %s: problems (-view +check):\n%s", m.Ref, diff)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(views) {
		t.Errorf("interchange: %d verdicts, the parse found %d messages", n, len(views))
	}
	return messages, failed, true
}

// joinedRules are the RuleErrors err joins, in order.
func joinedRules(err error) []RuleError {
	if err == nil {
		return nil
	}
	var out []RuleError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		out = append(out, *e.(*RuleError))
	}
	return out
}

// rulesVariants are the default rules; strict ones, which switch on what
// the defaults leave off; and lenient ones, under which the directory's
// findings are warnings, so that an interchange whose messages break the
// logistics rules is sound and checked whole.
func rulesVariants() map[string]EDIRules {
	strict := DefaultEDIRules()
	strict.StrictCharset = true
	strict.RequiredParties = map[string][]string{"IFTMIN": {"CZ", "CN", "FW"}, "VERMAS": {"TB"}, "COPRAR": {"CA", "ZZ"}}
	strict.Directory.Unknown = ActionReject
	lenient := DefaultEDIRules()
	lenient.Directory = DirectoryPolicy{Segments: ActionWarn, Elements: ActionWarn, Representation: ActionWarn,
		Length: ActionWarn, Codes: ActionWarn, Unknown: ActionWarn}
	return map[string]EDIRules{"default": DefaultEDIRules(), "strict": strict, "lenient": lenient}
}

// TestRulesAsView holds ruleCheck, which reads each value where it stands
// as the segments go by, to the rules run over the whole view, on the
// interchanges above and the repository's fixtures.
func TestRulesAsView(t *testing.T) {
	for name, text := range map[string]string{"brokenRules": brokenRules, "missingBGM": missingBGM, "repeatedRules": repeatedRules, "brokenCharset": brokenCharset, "repeatedElements": repeatedElements} {
		n := 0
		if _, err := edifact.Parse(strings.NewReader(text), edifact.Limits{}, func(*edifact.Message) error { n++; return nil }); err != nil || n == 0 {
			t.Fatalf("%s must parse to be of use: %d messages, %v", name, n, err)
		}
	}
	var messages, failed int
	whole := map[string]bool{}
	for name, data := range builtInRuleInputs(t) {
		for variant, rules := range rulesVariants() {
			t.Run(name+"/"+variant, func(t *testing.T) {
				n, f, ok := sameAsView(t, data, rules)
				messages, failed = messages+n, failed+f
				whole[name+"/"+variant] = ok
			})
		}
	}
	// The interchanges above alone have 10 messages, each failing under
	// every rule set but brokenCharset's under the default and lenient
	// ones: a comparison of passes would prove little. Those that carry a
	// message check from message to message must be compared whole.
	if messages < 30 || failed < 28 {
		t.Errorf("compared %d messages, %d failing: too few to hold the rules to anything", messages, failed)
	}
	for _, w := range []string{"brokenRules/lenient", "repeatedElements/default", "repeatedRules/default", "repeatedRules/strict", "repeatedRules/lenient"} {
		if !whole[w] {
			t.Errorf("%s was not sound, and was not compared as a whole interchange", w)
		}
	}
	n := 0
	for _, ok := range whole {
		if ok {
			n++
		}
	}
	t.Logf("%d messages compared, %d failing; %d of %d interchanges also whole", messages, failed, n, len(whole))
}

// TestRulesAsViewOnCorpus is TestRulesAsView on the shared corpus's
// interchanges.
func TestRulesAsViewOnCorpus(t *testing.T) {
	in := map[string][]byte{}
	readDir(t, in, testenv.Corpus(t, "edifact"))
	for name, data := range in {
		for variant, rules := range rulesVariants() {
			t.Run(name+"/"+variant, func(t *testing.T) { sameAsView(t, data, rules) })
		}
	}
}

// FuzzRules holds ruleCheck to the view's rules on any interchange.
func FuzzRules(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	in := builtInRuleInputs(f)
	for _, name := range slices.Sorted(maps.Keys(in)) {
		seeds.Add(in[name])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, rules := range rulesVariants() {
			sameAsView(t, data, rules)
		}
	})
}

// TestRulesForgetPassesWithTheSeparators checks two interchanges one
// after the other, the second under another component separator, with the
// same LOC bytes: a UN/LOCODE declared by code list 139 in the second,
// only a terminal code in the first. What passed under the first
// separators must be read again under the second: a message check that
// goes back to the pool forgets what passed.
func TestRulesForgetPassesWithTheSeparators(t *testing.T) {
	const loc = "LOC+9+XXAAA*139'"
	msg := "UNH+1+IFTMIN:D:99B:UN'BGM+610+B1+9'" + loc + "NAD+CZ+S'NAD+CN+R'UNT+6+1'"
	plain := "UNB+UNOC:3+A:ZZ+B:ZZ+261130:1200+F1'" + msg + "UNZ+1+F1'"
	starred := "UNA*+.? '" + strings.NewReplacer(":", "*").Replace(plain)

	// The pool may or may not hand the same message check over again, so
	// that the two interchanges below share one only most of the time:
	// the check that goes back to it is looked at too.
	mc := messageChecks.Get().(*messageCheck)
	edifact.Parse(strings.NewReader(plain), edifact.Limits{}, func(m *edifact.Message) error {
		rules := DefaultEDIRules()
		mc.begin(m, Builtin(), &rules)
		for i, s := range m.All() {
			mc.segment(i, s)
		}
		mc.end()
		return nil
	})
	if !mc.rules.passed[passedLOC].has([]byte(loc[:len(loc)-1])) {
		t.Fatal("the LOC that passed is not remembered: the test proves nothing")
	}
	mc.release()
	for k := range mc.rules.passed {
		for _, raw := range mc.rules.passed[k].raw {
			if len(raw) > 0 {
				t.Fatalf("a message check back in the pool remembers %q as passed", raw)
			}
		}
	}

	dir := t.TempDir()
	var codes [2][]string
	for n, text := range []string{plain, starred} {
		path := filepath.Join(dir, fmt.Sprintf("%d.edi", n))
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, res, err := CheckInterchange(t.Context(), path, nil, Builtin(), DefaultEDIRules(), "")
		if err != nil {
			t.Fatalf("interchange %d: %v", n, err)
		}
		if err := res.EachMessage(t.Context(), func(m MessageResult) error {
			for _, r := range joinedRules(m.Err) {
				codes[n] = append(codes[n], r.Code)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if slices.Contains(codes[0], "edifact.locode.unknown") || !slices.Contains(codes[1], "edifact.locode.unknown") {
		t.Fatalf("problems %q then %q: want edifact.locode.unknown under the second separators only", codes[0], codes[1])
	}
}

// TestRuleFindingsAreBounded: a rule keeps at most max_findings of its
// findings of each tier per message; the last one kept counts the others,
// and the verdict (the first finding, its tier and code) is the one the
// whole list would give: a VERMAS whose containers break their check
// digit past the limit before one lacks its verified gross mass still
// fails as regulatory, on that container; and a message of more bad dates
// than the limit keeps the first ones, in order.
func TestRuleFindingsAreBounded(t *testing.T) {
	const limit = 5
	rules := DefaultEDIRules()
	rules.Directory = DirectoryPolicy{Segments: ActionIgnore, Elements: ActionIgnore, Representation: ActionIgnore,
		Length: ActionIgnore, Codes: ActionIgnore, Unknown: ActionIgnore, MaxFindings: limit}
	var b strings.Builder
	b.WriteString("UNB+UNOC:3+A:ZZ+B:ZZ+261130:1200+F1'UNH+1+VERMAS:D:16A:UN'BGM+749+V1+9'")
	segs := 2 // UNH, BGM
	for i := range 2 * limit {
		fmt.Fprintf(&b, "DTM+137:2026%02d31:102'EQD+CN+MSKU907032%d'MEA+AAE+VGM+KGM:20000'", 13+i, i%3) // no check digit is 4
		segs += 3
	}
	b.WriteString("EQD+CN+MSKU9070323'") // a sound number, but no VGM
	segs++
	fmt.Fprintf(&b, "UNT+%d+1'UNZ+1+F1'", segs+1)
	n := 0
	if _, err := edifact.Parse(strings.NewReader(b.String()), edifact.Limits{}, func(m *edifact.Message) error {
		n++
		_, err := CheckMessage(m, Builtin(), rules)
		got := joinedRules(err)
		codes := map[string]int{}
		for _, r := range got {
			codes[r.Code]++
		}
		want := map[string]int{"edifact.vgm.missing": 1, "edifact.container.check-digit": limit, "edifact.dtm.invalid": limit}
		if diff := cmp.Diff(want, codes); diff != "" {
			t.Fatalf("findings by code (-want +got):\n%s", diff)
		}
		if got[0].Code != "edifact.vgm.missing" || got[0].Tier != TierRegulatory || got[0].Segment != segs {
			t.Errorf("first finding %+v, want the regulatory edifact.vgm.missing of segment %d", got[0], segs)
		}
		k := 0
		for _, r := range got {
			if r.Code == "edifact.dtm.invalid" {
				if !strings.Contains(r.Reason, fmt.Sprintf("2026%02d31", 13+k)) {
					t.Errorf("bad date %d: %s: want the first ones, in order", k, r.Reason)
				}
				k++
			}
		}
		for _, code := range []string{"edifact.container.check-digit", "edifact.dtm.invalid"} {
			var last RuleError
			for _, r := range got {
				if r.Code == code {
					last = r
				}
			}
			if want := fmt.Sprintf("and %d more", limit); !strings.Contains(last.Reason, want) {
				t.Errorf("last %s: %q does not say %q", code, last.Reason, want)
			}
		}
		return nil
	}); err != nil || n != 1 {
		t.Fatalf("parse: %v (%d messages)", err, n)
	}
	if _, _, whole := sameAsView(t, []byte(b.String()), rules); !whole {
		t.Error("the interchange was not compared whole with the view's rules")
	}
}

// TestPartyMissingNamesFewParties: the finding on a missing party names
// the functions the message does name, but no more than a few and each
// cut short, however many NADs of long, distinct functions it holds.
// Before, each missing party's finding listed every one: 500 NADs of
// 60,000-byte functions (a 30 MB file) made two findings of 30 MB each,
// and `lazaret inspect` peaked at 851 MB.
func TestPartyMissingNamesFewParties(t *testing.T) {
	var b strings.Builder
	b.WriteString("UNB+UNOC:3+A:ZZ+B:ZZ+261130:1200+F1'UNH+1+IFTMIN:D:99B:UN'BGM+610+B1+9'")
	const n = 200
	for i := range n {
		fmt.Fprintf(&b, "NAD+%04d%s'", i, strings.Repeat("Q", 1000))
	}
	fmt.Fprintf(&b, "UNT+%d+1'UNZ+1+F1'", n+3)
	rules := DefaultEDIRules()
	rules.Directory.Length = ActionIgnore
	found := 0
	edifact.Parse(strings.NewReader(b.String()), edifact.Limits{}, func(m *edifact.Message) error {
		_, err := CheckMessage(m, Builtin(), rules)
		for _, r := range joinedRules(err) {
			if r.Code != "edifact.party.missing" {
				continue
			}
			found++
			if len(r.Reason) > 2000 {
				t.Errorf("%d-byte reason: %.200q...", len(r.Reason), r.Reason)
			}
			if !strings.Contains(r.Reason, "0000QQQQ") || !strings.HasSuffix(r.Reason, "and others") {
				t.Errorf("reason %.300q...%q: want the first functions named, and others", r.Reason, r.Reason[max(0, len(r.Reason)-40):])
			}
		}
		return nil
	})
	if found != 2 {
		t.Fatalf("%d edifact.party.missing findings, want 2 (CZ, CN)", found)
	}
	sameAsView(t, []byte(b.String()), rules)
}
