package validate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

func message(t *testing.T, m fixtures.Msg) *edifact.Message {
	t.Helper()
	var b bytes.Buffer
	if err := fixtures.WriteInterchange(&b, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "1", Msgs: []fixtures.Msg{m}}); err != nil {
		t.Fatal(err)
	}
	var got *edifact.Message
	_, err := edifact.Parse(&b, edifact.Limits{}, func(msg *edifact.Message) error {
		got = msg.Clone() // msg and its segments are reused after the callback
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestMessageRules(t *testing.T) {
	t.Parallel()
	regs := validate.Builtin()
	rules := validate.DefaultEDIRules()
	both := [2]string{"CZ", "CN"}
	cases := []struct {
		name string
		msg  fixtures.Msg
		tier validate.Tier
		code string
		tag  string
	}{
		{"good IFTMIN", fixtures.IFTMIN("1", both, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130"), "", "", ""},
		{"good VERMAS", fixtures.VERMAS("1", fixtures.ContainerOK1, 24000), "", "", ""},
		{"good COPRAR", fixtures.COPRAR("1", fixtures.ContainerOK3, "DEHAM"), "", "", ""},
		{"unknown LOCODE", fixtures.IFTMIN("1", both, "NLRTM", "NLZZZ", fixtures.ContainerOK2, "847130"), validate.TierSemantic, "edifact.locode.unknown", "LOC"},
		{"malformed LOCODE", fixtures.IFTMIN("1", both, "NLRTM", "NL1XX", fixtures.ContainerOK2, "847130"), validate.TierSemantic, "edifact.locode.malformed", "LOC"},
		{"check digit", fixtures.IFTMIN("1", both, "NLRTM", "SGSIN", fixtures.ContainerWrong, "847130"), validate.TierSemantic, "edifact.container.check-digit", "EQD"},
		{"consignor twice", fixtures.IFTMIN("1", [2]string{"CZ", "CZ"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130"), validate.TierSemantic, "edifact.party.missing", "NAD"},
		{"consignee's agent is not the consignee", fixtures.IFTMIN("1", [2]string{"CZ", "CX"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130"), validate.TierSemantic, "edifact.party.missing", "NAD"},
		{"VGM below floor", fixtures.VERMAS("1", fixtures.ContainerOK1, 900), validate.TierRegulatory, "edifact.vgm.implausible", "MEA"},
		{"VGM above max", fixtures.VERMAS("1", fixtures.ContainerOK1, 45000), validate.TierRegulatory, "edifact.vgm.implausible", "MEA"},
		{"VGM missing", fixtures.VERMAS("1", fixtures.ContainerOK1, -1), validate.TierRegulatory, "edifact.vgm.missing", "EQD"},
		{"HS unknown", fixtures.IFTMIN("1", both, "NLRTM", "SGSIN", fixtures.ContainerOK2, "772100"), validate.TierRegulatory, "edifact.hs.unknown", "PIA"},
		{"HS national 10 digits", fixtures.IFTMIN("1", both, "NLRTM", "SGSIN", fixtures.ContainerOK2, "8471300010"), "", "", ""},
	}
	for _, tc := range cases {
		m := message(t, tc.msg)
		_, err := validate.CheckMessage(m, regs, rules)
		var re *validate.RuleError
		if tc.code == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.As(err, &re) || re.Tier != tc.tier || re.Code != tc.code || re.Tag != tc.tag {
			t.Errorf("%s: got %v, want %s %s at %s", tc.name, err, tc.tier, tc.code, tc.tag)
			continue
		}
		if re.Segment < 2 && tc.tag != "NAD" || re.Offset <= m.Offset {
			t.Errorf("%s: position segment %d offset %d (UNH at %d)", tc.name, re.Segment, re.Offset, m.Offset)
		}
	}
	// Without BGM: structural, first among several problems.
	m := message(t, fixtures.Msg{Ref: "9", Type: "IFTMIN", Body: []fixtures.Seg{fixtures.S("LOC", "9", "NLZZZ:139:6")}})
	_, err := validate.CheckMessage(m, regs, rules)
	var re *validate.RuleError
	if !errors.As(err, &re) || re.Tier != validate.TierStructural || re.Code != "edifact.bgm.missing" {
		t.Fatalf("missing BGM: %v", err)
	}
	if !strings.Contains(err.Error(), "edifact") && !strings.Contains(err.Error(), "UN/LOCODE NLZZZ") {
		t.Errorf("all problems should be reported: %v", err)
	}
}

func TestContainerCheckDigit(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"CSQU3054383", fixtures.ContainerOK1, fixtures.ContainerOK2, fixtures.ContainerOK3} {
		if err := validate.CheckContainer(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"CSQU3054384", "CSQX3054383", "CSQU305438", "csqu3054383", "MSCU6639871"} {
		if validate.CheckContainer(bad) == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestRegistriesLoadAndRefresh(t *testing.T) {
	t.Parallel()
	dir := testenv.Corpus(t, "registries")
	loc, err := validate.LoadLOCODE(filepath.Join(dir, "unlocode", "2024-2_UNLOCODE_CodeListPart2.csv"))
	if err != nil || !loc.Has("NLRTM") || !loc.Has("NLVLI") || loc.Has("NLZZZ") || loc.Len() < 20000 {
		t.Fatalf("UN/LOCODE part 2: %v, %d codes", err, loc.Len())
	}
	full, err := validate.LoadLOCODE(filepath.Join(dir, "unlocode", "unlocode-code-list-2018-1.csv.bz2"))
	if err != nil || !full.Has("DEHAM") || !full.Has("CNSHA") {
		t.Fatalf("UN/LOCODE 2018-1 (bz2): %v", err)
	}
	hs, err := validate.LoadHS(filepath.Join(dir, "hs", "harmonized-system.csv"))
	if err != nil || !hs.Has("847130") || !hs.Has("0101") || hs.Has("999999") || hs.Has("772100") {
		t.Fatalf("HS: %v", err)
	}
	// A store picks up a changed file: a new version without a restart.
	tmp := filepath.Join(t.TempDir(), "loc.csv")
	os.WriteFile(tmp, []byte(",\"NL\",\"RTM\",\"Rotterdam\",,,,,,,,\n"), 0o644)
	store := &validate.RegistryStore{LOCODEFiles: []string{tmp}}
	v1 := store.Current().LOCODE.Version()
	if store.Current().LOCODE.Has("NLVLI") {
		t.Fatal("NLVLI before the refresh")
	}
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(tmp, []byte(",\"NL\",\"RTM\",\"Rotterdam\",,,,,,,,\n,\"NL\",\"VLI\",\"Vlissingen\",,,,,,,,\n"), 0o644)
	changed, err := store.Refresh()
	if err != nil || !changed || !store.Current().LOCODE.Has("NLVLI") || store.Current().LOCODE.Version() == v1 {
		t.Fatalf("refresh: changed %v err %v version %s (was %s)", changed, err, store.Current().LOCODE.Version(), v1)
	}
	if changed, _ := store.Refresh(); changed {
		t.Error("an unchanged file must not make a new version")
	}
}

// verdict sums up what CheckInterchange decided for a file: the
// interchange dead-lettered (with the code), or per message accepted or
// quarantined (with the first code), and the directory warnings.
func verdict(t *testing.T, path string, rules validate.EDIRules) (string, []tiff.Warning) {
	t.Helper()
	rep, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), rules, "")
	if err != nil {
		var se *edifact.SyntaxError
		var re *validate.RuleError
		var ue *edifact.UnsupportedError
		switch {
		case errors.As(err, &re):
			return "dead-letter " + re.Code, nil
		case errors.As(err, &se):
			return "dead-letter " + se.Name(), nil
		case errors.As(err, &ue):
			return "dead-letter unsupported", nil
		}
		return "error " + err.Error(), nil
	}
	var parts []string
	var warns []tiff.Warning
	if err := res.EachMessage(context.Background(), func(m validate.MessageResult) error {
		warns = append(warns, m.Warnings...)
		var re *validate.RuleError
		switch {
		case errors.As(m.Err, &re):
			parts = append(parts, "quarantine "+re.Code)
		case m.Err != nil:
			parts = append(parts, "quarantine "+m.Err.Error())
		default:
			parts = append(parts, "accept")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(parts, ", "), append(rep.Warnings, warns...)
}

// TestCorpusDirectoryVerdicts: with the default policy every interchange of
// the shared corpus whose envelope is sound passes, except the two whose
// content is broken on purpose; each directory finding they carry is
// pinned in edifact/directory/testdata/corpus.golden.
func TestCorpusDirectoryVerdicts(t *testing.T) {
	t.Parallel()
	dir := testenv.Corpus(t, "edifact")
	want := map[string]string{
		// Envelope faults, found before any message rule (unchanged).
		"d00b_iftsta.edi":       "dead-letter edifact.reference-mismatch",
		"d95b_coprar.edi":       "dead-letter edifact.unb-missing",
		"example_multiline.edi": "dead-letter edifact.count-mismatch",
		"orders-with-group.edi": "dead-letter edifact.count-mismatch",
		"order.edi":             "dead-letter edifact.unz-missing",
		"aperak.edi":            "dead-letter edifact.count-mismatch",
		"VIFTSAI0000001.txt":    "dead-letter edifact.unz-missing",
		"VIFTSAI0000002.txt":    "dead-letter edifact.unz-missing",
		"VIFTSAI0000003.txt":    "dead-letter edifact.unz-missing",
		"simple.edi":            "dead-letter edifact.count-mismatch",
		"edifact-sample.edi":    "dead-letter edifact.count-mismatch",
		// Broken content, found by the directory: staedi's negative test
		// (non-numeric QTY 6060 "1020A", PRI "$1.179", a second UNS) and the
		// order php-edifact rejects (an unescaped ':' in IMD: a seventh
		// component).
		"invoic_d97b_bad.edi":     "dead-letter edifact.directory.representation",
		"example_order_error.edi": "dead-letter edifact.directory.component-extra",
		// Sound syntax; the semantic rules on top quarantine them as before
		// (UN/LOCODEs outside the small built-in registry, 6-digit dates
		// under format 102), the directory adds warnings only.
		"D95BBAPLIE.edi":      "quarantine edifact.locode.unknown",
		"D95BCOARRI.edi":      "quarantine edifact.locode.unknown, quarantine edifact.locode.unknown",
		"baplie-test.edi":     "quarantine edifact.locode.unknown",
		"invoic_d93a_una.edi": "quarantine edifact.dtm.invalid",
		"invoice1.edi":        "quarantine edifact.dtm.invalid",
		// Good: codes outside UNCL and over-long units are warnings.
		"example_order_ok.edi":    "accept",
		"example_utf8.edi":        "accept",
		"invoic_d97b.edi":         "accept",
		"wrapped_invoic_d97b.edi": "accept",
		"wikipedia_en.edi":        "accept", // IATB:1 (PAORES), level B
		"invoic01.edi":            "accept, accept",
		"orders01.edi":            "accept, accept",
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != len(want) {
		t.Errorf("%d corpus files, %d verdicts: keep the table in step with the corpus", len(files), len(want))
	}
	for _, f := range files {
		name := filepath.Base(f)
		got, warns := verdict(t, f, validate.DefaultEDIRules())
		if got != want[name] {
			t.Errorf("%s: %s, want %s", name, got, want[name])
		}
		for _, w := range warns {
			if strings.HasPrefix(w.Code, "edifact.directory.") && (w.Offset == nil || *w.Offset <= 0) {
				t.Errorf("%s: warning without an offset: %+v", name, w)
			}
		}
	}
}

// TestLogisticsFixturesPassTheDirectory: the good fixtures pass; each
// fixture keeps the verdict it had before the directory checks.
func TestLogisticsFixturesPassTheDirectory(t *testing.T) {
	t.Parallel()
	b, err := fixtures.WriteLogisticsBatch(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(b.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Items []struct {
			ObjectID string `json:"object_id"`
			Path     string `json:"path"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	for key, exp := range b.Expect {
		object, ref, _ := strings.Cut(key, "#")
		var path string
		for _, it := range manifest.Items {
			if it.ObjectID == object {
				path = filepath.Join(b.Dir, it.Path)
			}
		}
		if path == "" {
			t.Fatalf("%s: no item", key)
		}
		_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), validate.DefaultEDIRules(), "")
		var re *validate.RuleError
		switch exp.Destination {
		case "dead-letter":
			var se *edifact.SyntaxError
			switch {
			case errors.As(err, &re):
				if re.Code != exp.Code {
					t.Errorf("%s: dead-letter %s, want %s", key, re.Code, exp.Code)
				}
			case errors.As(err, &se):
				if se.Name() != exp.Code {
					t.Errorf("%s: dead-letter %s, want %s", key, se.Name(), exp.Code)
				}
			default:
				t.Errorf("%s: %v, want dead-letter %s", key, err, exp.Code)
			}
		case "accept", "quarantine":
			if err != nil {
				t.Errorf("%s: %v, want %s", key, err, exp.Destination)
				continue
			}
			if err := res.EachMessage(context.Background(), func(m validate.MessageResult) error {
				if ref != "" && m.Ref != ref {
					return nil
				}
				switch {
				case exp.Destination == "accept" && m.Err != nil:
					t.Errorf("%s: message %s refused: %v", key, m.Ref, m.Err)
				case exp.Destination == "quarantine" && (!errors.As(m.Err, &re) || re.Code != exp.Code):
					t.Errorf("%s: message %s: %v, want %s", key, m.Ref, m.Err, exp.Code)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// markedMessage parses an interchange written with § where findings are
// expected (removed before parsing) and returns its first message and the
// offsets of the markers, in order.
func markedMessage(t *testing.T, text string) (*edifact.Message, []int64) {
	t.Helper()
	var offs []int64
	for {
		i := strings.Index(text, "§")
		if i < 0 {
			break
		}
		offs = append(offs, int64(i))
		text = text[:i] + text[i+len("§"):]
	}
	var got *edifact.Message
	_, err := edifact.Parse(strings.NewReader(text), edifact.Limits{}, func(m *edifact.Message) error {
		if got == nil {
			got = m.Clone()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return got, offs
}

// badIFTMIN breaks its directory four ways: a 36-character document number
// (1004 an..35), an unknown transport stage code (8051), a letter in a
// package count (7224 n..8) and a segment no IFTMIN has.
const badIFTMIN = "UNB+UNOC:3+S+R+261130:1200+1'\n" +
	"UNH+1+IFTMIN:D:99B:UN'\nBGM+610+§BK34567890123456789012345678901234567+9'\nDTM+137:20261130:102'\nTDT+§99+V1+1'\n" +
	"LOC+9+NLRTM:139:6'\nLOC+11+SGSIN:139:6'\nNAD+CZ+SHIPPER1::92'\nNAD+CN+RECEIVER1::92'\nGID+1+1§X:CT'\nPIA+5+847130:HS'\n" +
	"MEA+AAE+G+KGM:12000'\nEQD+CN+MSKU9070323+22G1:6346:5'\n§XYZ+1'\nUNT+14+1'\nUNZ+1+1'\n"

func TestDirectoryPolicy(t *testing.T) {
	t.Parallel()
	m, offs := markedMessage(t, badIFTMIN)
	regs := validate.Builtin()
	type pos struct {
		code                        string
		segment, element, component int
		offset                      int64
	}
	tooLong := pos{"edifact.directory.too-long", 2, 2, 1, offs[0]}
	code := pos{"edifact.directory.code-unknown", 4, 1, 0, offs[1]}
	repr := pos{"edifact.directory.representation", 9, 2, 1, offs[2]}
	unexpected := pos{"edifact.directory.segment-unexpected", 13, 0, 0, offs[3]}
	ruleErrors := func(err error) []pos {
		var out []pos
		if err == nil {
			return nil
		}
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			re := e.(*validate.RuleError)
			if strings.HasPrefix(re.Code, "edifact.directory.") {
				out = append(out, pos{re.Code, re.Segment, re.Element, re.Component, re.Offset})
			}
		}
		return out
	}
	warned := func(ws []tiff.Warning) []string {
		var out []string
		for _, w := range ws {
			if strings.HasPrefix(w.Code, "edifact.directory.") {
				out = append(out, fmt.Sprintf("%s@%d", w.Code, *w.Offset))
			}
		}
		return out
	}
	at := func(p pos) string { return fmt.Sprintf("%s@%d", p.code, p.offset) }

	// Defaults: syntax rejected (structural), length and codes warned.
	warns, err := validate.CheckMessage(m, regs, validate.DefaultEDIRules())
	if got, want := ruleErrors(err), []pos{repr, unexpected}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("default rejects %v, want %v", got, want)
	}
	var re *validate.RuleError
	if !errors.As(err, &re) || re.Tier != validate.TierStructural || re.Syntax != 37 || re.Registry != "IFTMIN D:99B directory" {
		t.Errorf("first error %+v: want structural, 0085 code 37, the directory named", re)
	}
	if got, want := warned(warns), []string{at(tooLong), at(code)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("default warns %v, want %v", got, want)
	}

	// Everything rejected: code values are semantic, the rest structural.
	strict := validate.DefaultEDIRules()
	strict.Directory = validate.DirectoryPolicy{Segments: validate.ActionReject, Elements: validate.ActionReject,
		Representation: validate.ActionReject, Length: validate.ActionReject, Codes: validate.ActionReject}
	_, err = validate.CheckMessage(m, regs, strict)
	if got, want := ruleErrors(err), []pos{tooLong, repr, unexpected, code}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("strict rejects %v, want %v (structural first)", got, want)
	}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		re := e.(*validate.RuleError)
		if want := validate.TierStructural; re.Code == code.code {
			want = validate.TierSemantic
			if re.Tier != want {
				t.Errorf("%s: tier %s, want %s", re.Code, re.Tier, want)
			}
		} else if strings.HasPrefix(re.Code, "edifact.directory.") && re.Tier != want {
			t.Errorf("%s: tier %s, want %s", re.Code, re.Tier, want)
		}
	}

	// Everything ignored.
	off := validate.DefaultEDIRules()
	off.Directory = validate.DirectoryPolicy{Segments: validate.ActionIgnore, Elements: validate.ActionIgnore,
		Representation: validate.ActionIgnore, Length: validate.ActionIgnore, Codes: validate.ActionIgnore}
	warns, err = validate.CheckMessage(m, regs, off)
	if ruleErrors(err) != nil || warned(warns) != nil {
		t.Errorf("ignored: %v, %v", err, warns)
	}

	// A zero policy means the defaults.
	zero := validate.DefaultEDIRules()
	zero.Directory = validate.DirectoryPolicy{}
	_, err = validate.CheckMessage(m, regs, zero)
	if got := ruleErrors(err); len(got) != 2 {
		t.Errorf("zero policy rejects %v, want the defaults", got)
	}

	// The limit keeps the first findings and still fails the message.
	capped := strict
	capped.Directory.MaxFindings = 1
	_, err = validate.CheckMessage(m, regs, capped)
	if got := ruleErrors(err); len(got) != 2 || got[0] != tooLong || got[1].code != repr.code || !strings.Contains(err.Error(), "and 2 more") {
		t.Errorf("capped: %v (%v)", got, err)
	}

	if err := (validate.DirectoryPolicy{Codes: "quarantine"}).Validate(); err == nil || !strings.Contains(err.Error(), "edi.directory.codes") {
		t.Errorf("a bad action: %v", err)
	}
	if err := validate.DefaultDirectoryPolicy().Validate(); err != nil {
		t.Error(err)
	}
}

// TestUnknownDirectory: a release the directory does not hold gets the
// envelope checks and a warning, or nothing, or a semantic refusal.
func TestUnknownDirectory(t *testing.T) {
	t.Parallel()
	m := message(t, fixtures.VERMAS("1", fixtures.ContainerOK1, 24000)) // VERMAS D:16A
	rules := validate.DefaultEDIRules()
	warns, err := validate.CheckMessage(m, validate.Builtin(), rules)
	if err != nil || len(warns) != 1 || warns[0].Code != "edifact.directory.unknown" || *warns[0].Offset != m.Offset ||
		!strings.Contains(warns[0].Message, "VERMAS:D:16A:UN") {
		t.Fatalf("unknown release: %v %+v", err, warns)
	}
	rules.Directory.Unknown = validate.ActionIgnore
	if warns, err := validate.CheckMessage(m, validate.Builtin(), rules); err != nil || len(warns) != 0 {
		t.Errorf("ignored: %v %+v", err, warns)
	}
	rules.Directory.Unknown = validate.ActionReject
	_, err = validate.CheckMessage(m, validate.Builtin(), rules)
	var re *validate.RuleError
	if !errors.As(err, &re) || re.Code != "edifact.directory.unknown" || re.Tier != validate.TierSemantic {
		t.Errorf("rejected: %v", err)
	}
}

// TestServiceMessages: AUTACK and KEYMAN carry no BGM; CONTRL is checked
// against its own table, and the CONTRL Lazaret writes passes it.
func TestServiceMessages(t *testing.T) {
	t.Parallel()
	regs, rules := validate.Builtin(), validate.DefaultEDIRules()
	for _, typ := range []string{"AUTACK", "KEYMAN"} {
		m := message(t, fixtures.Msg{Ref: "1", Type: typ, Body: []fixtures.Seg{fixtures.S("USH", "7", "1", "1", "1", "2", "1")}})
		warns, err := validate.CheckMessage(m, regs, rules)
		if err != nil {
			t.Errorf("%s without BGM: %v", typ, err)
		}
		if len(warns) != 1 || warns[0].Code != "edifact.directory.unknown" {
			t.Errorf("%s: warnings %+v, want one: no directory", typ, warns)
		}
	}
	// A CONTRL rejecting the UNT of message 1 of the unt-count fixture.
	var in bytes.Buffer
	bad := fixtures.IFTMIN("1", [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")
	bad.UNTCount = 9
	fixtures.WriteInterchange(&in, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "7", Msgs: []fixtures.Msg{bad}})
	ic, perr := edifact.Parse(&in, edifact.Limits{}, nil)
	var se *edifact.SyntaxError
	if !errors.As(perr, &se) {
		t.Fatalf("want a syntax error, got %v", perr)
	}
	var out bytes.Buffer
	if err := edifact.WriteCONTRL(&out, edifact.ContrlReport{Interchange: ic, Err: se, Reference: "C1"}); err != nil {
		t.Fatal(err)
	}
	written := out.String()
	m, _ := markedMessage(t, written)
	if m.Type != "CONTRL" {
		t.Fatalf("message %s", m.Type)
	}
	warns, err := validate.CheckMessage(m, regs, rules)
	if err != nil || len(warns) != 0 {
		t.Errorf("the CONTRL Lazaret writes: %v %+v\n%s", err, warns, written)
	}
	// Without its UCI it breaks its table.
	broken := strings.Replace(written, "\nUCI+", "\nXCI+", 1)
	broken = broken[:strings.Index(broken, "\nXCI+")+1] + "§" + broken[strings.Index(broken, "\nXCI+")+1:]
	broken = strings.Replace(broken, "§XCI+", "§UCM+", 1)
	m, offs := markedMessage(t, broken)
	_, err = validate.CheckMessage(m, regs, rules)
	var re *validate.RuleError
	if !errors.As(err, &re) || re.Code != "edifact.directory.segment-missing" || re.Offset != offs[0] || re.Segment != 2 {
		t.Errorf("CONTRL without UCI: %v (want segment-missing at segment 2, byte %d)", err, offs[0])
	}
}

// TestSyntaxIdentifierVerdicts: IATA's syntax passes as UN/EDIFACT's does,
// its level A warning on lower case as UNOA does; UNOZ passes with one
// warning that no repertoire was checked.
func TestSyntaxIdentifierVerdicts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	paores := func(id, text string) string {
		return "UNA:+.? 'UNB+" + id + "+6XPPC:ZZ+LHPPC:ZZ+940101:0950+1'UNH+1+PAORES:93:1:IA'MSG+1:45'IFT+3+" + text +
			"'UNT+4+1'UNZ+1+1'"
	}
	for _, tc := range []struct {
		name, in string
		want     string // the warning code expected, "" for none of these
	}{
		{"IATA", paores("IATA:1", "NO MORE FLIGHTS"), ""},
		{"IATA lower case", paores("IATA:1", "No more flights"), "edifact.charset"},
		{"UNOA lower case", paores("UNOA:1", "No more flights"), "edifact.charset"},
		{"IATB lower case", paores("IATB:3", "No more flights"), ""},
		{"UNOZ", paores("UNOZ:3", "Keine Flüge mehr"), "edifact.charset.unchecked"},
	} {
		path := filepath.Join(dir, tc.name+".edi")
		if err := os.WriteFile(path, []byte(tc.in), 0o600); err != nil {
			t.Fatal(err)
		}
		got, warns := verdict(t, path, validate.DefaultEDIRules())
		if got != "accept" {
			t.Errorf("%s: %s, want accept", tc.name, got)
		}
		var codes []string
		for _, w := range warns {
			if strings.HasPrefix(w.Code, "edifact.charset") {
				codes = append(codes, w.Code)
				if w.Offset == nil {
					t.Errorf("%s: %s without an offset", tc.name, w.Code)
				}
			}
		}
		if strings.Join(codes, ",") != tc.want {
			t.Errorf("%s: charset warnings %v, want %q", tc.name, codes, tc.want)
		}
	}
}
