package validate_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

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
