package validate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/edifact/directory"
	"github.com/lazaret/lazaret/validate"
)

// TestAgencyAwareRules: the UN directory's rules apply to messages whose
// controlling agency (UNH 0051) is UN. A German health-insurance
// KOTR:02:001:KV message begins with IDK by design and names its party
// without a UN 3035 qualifier: it is accepted, with the one warning that
// no directory was applied, at its UNH. A UN INVOIC without BGM is still
// dead-lettered for the BGM, at its second segment.
func TestAgencyAwareRules(t *testing.T) {
	t.Parallel()
	rules := validate.DefaultEDIRules()
	got, warns := verdict(t, "testdata/agency/kotr-no-bgm.edi", rules)
	if got != "accept" {
		t.Fatalf("KOTR:02:001:KV without BGM: %s, want accept", got)
	}
	kotr, err := os.ReadFile("testdata/agency/kotr-no-bgm.edi")
	if err != nil {
		t.Fatal(err)
	}
	unh := int64(strings.Index(string(kotr), "UNH+00001")) // byte 66
	if len(warns) != 1 || warns[0].Code != "edifact.directory.unknown" || warns[0].Offset == nil || *warns[0].Offset != unh ||
		!strings.Contains(warns[0].Message, `agency "KV" has no directory`) || !strings.Contains(warns[0].Message, "KOTR:02:001:KV") {
		t.Errorf("KOTR warnings %+v, want one naming that no directory of KV was applied, at byte %d", warns, unh)
	}

	// Under a policy that rejects messages without a directory, the KV
	// message is quarantined for exactly that, not for BGM.
	strict := rules
	strict.Directory.Unknown = validate.ActionReject
	if got, _ := verdict(t, "testdata/agency/kotr-no-bgm.edi", strict); got != "quarantine edifact.directory.unknown" {
		t.Errorf("KOTR under unknown=reject: %s", got)
	}

	path := "testdata/agency/invoic-no-bgm.edi"
	_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), rules, "")
	var re *validate.RuleError
	if !errors.As(err, &re) || re.Code != "edifact.bgm.missing" {
		t.Fatalf("UN INVOIC without BGM: %v (result %v), want edifact.bgm.missing", err, res)
	}
	invoic, _ := os.ReadFile(path)
	if want := int64(strings.Index(string(invoic), "DTM+137")); re.Offset != want || re.Segment != 2 {
		t.Errorf("BGM finding at segment %d byte %d, want segment 2 byte %d", re.Segment, re.Offset, want)
	}
}

// TestAgencyDirectory: an agency's own directory, where one is
// configured, is applied to its messages: the sound KOTR:02:001:KV
// message passes it without the warning that no directory was applied;
// one without its mandatory IDK is refused at its second segment by the
// KV directory (not by the UN's BGM rule); one of a release the KV
// directory does not hold gets the warning, naming the configured
// directory.
func TestAgencyDirectory(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("testdata/agency/kv-directory.txt")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := directory.ParseSet(string(text))
	if err != nil {
		t.Fatal(err)
	}
	rules := validate.DefaultEDIRules()
	rules.Directories = map[string]*directory.Set{"KV": kv}
	if got, warns := verdict(t, "testdata/agency/kotr-no-bgm.edi", rules); got != "accept" || len(warns) != 0 {
		t.Errorf("KOTR under its own directory: %s %+v, want accept without warnings", got, warns)
	}
	kotr, _ := os.ReadFile("testdata/agency/kotr-no-bgm.edi")
	dir := t.TempDir()
	noIDK := strings.Replace(string(kotr), "IDK+101575519+99+BKK Beispiel+101575519'\n", "", 1)
	noIDK = strings.Replace(noIDK, "UNT+5+", "UNT+4+", 1)
	path := filepath.Join(dir, "no-idk.edi")
	os.WriteFile(path, []byte(noIDK), 0o644)
	_, _, err = validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), rules, "")
	var re *validate.RuleError
	if want := int64(strings.Index(noIDK, "VDT+")); !errors.As(err, &re) || re.Code != "edifact.directory.segment-missing" || re.Offset != want ||
		!strings.Contains(re.Registry, "KOTR 02:001") {
		t.Errorf("KOTR without IDK: %v, want segment-missing at byte %d from the KV directory", err, want)
	}
	other := filepath.Join(dir, "other-release.edi")
	os.WriteFile(other, []byte(strings.Replace(string(kotr), "KOTR:02:001:KV", "KOTR:02:009:KV", 1)), 0o644)
	if got, warns := verdict(t, other, rules); got != "accept" || len(warns) != 1 || !strings.Contains(warns[0].Message, `configured for agency "KV"`) {
		t.Errorf("a release the KV directory does not hold: %s %+v", got, warns)
	}
	if _, err := directory.ParseSet("S 0 UNH M0062:an1-14\nM 02 001 KOTR 0/1/1 7/1/1\n"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a table naming a segment the set does not hold: %v", err)
	}
}
