package validate_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
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
