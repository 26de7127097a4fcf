package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
)

// TestInspectShowsCharsetText: a value of an interchange in another
// character set is shown as its text in inspect's JSON and table: the
// Cyrillic port of a UNOE (ISO 8859-5) IFTMIN reads "Москва", not
// escapes; a byte its set does not define (0xa5 in UNOG, ISO 8859-3)
// stays an escape.
func TestInspectShowsCharsetText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, syntax, port string) string {
		var b bytes.Buffer
		m := fixtures.IFTMIN("1", [2]string{"CZ", "CN"}, "NLRTM", port, fixtures.ContainerOK2, "847130")
		if err := fixtures.WriteInterchange(&b, fixtures.Interchange{Syntax: syntax, Sender: "S", Recipient: "R", Ref: "1", Msgs: []fixtures.Msg{m}}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	unoe := write("unoe.edi", "UNOE", "\xbc\xde\xe1\xda\xd2\xd0") // Москва in ISO 8859-5
	unog := write("unog.edi", "UNOG", "\xa5\xa6")                 // undefined, Ĥ in ISO 8859-3
	for _, c := range []struct {
		path, want string
	}{{unoe, `"Москва" is not a UN/LOCODE`}, {unog, `"\xa5Ĥ" is not a UN/LOCODE`}} {
		out, stderr, _ := runCmd(t, "inspect", "--json", c.path)
		rs := jsonLines(t, out)
		if len(rs) != 1 || rs[0].Code != "edifact.locode.malformed" || !strings.Contains(rs[0].Message, c.want) {
			t.Errorf("%s --json: %+v (stderr %s), want a message with %s", filepath.Base(c.path), rs, stderr, c.want)
		}
		table, _, _ := runCmd(t, "inspect", c.path)
		if !strings.Contains(table, c.want) {
			t.Errorf("%s table:\n%s\nwant %s", filepath.Base(c.path), table, c.want)
		}
	}
}

// TestInspectTwoInterchanges: inspect of a file of two interchanges that
// reuse message reference 1 names the second's message file#2#1 in the
// table and gives its interchange in the JSON, at its offset in the file.
func TestInspectTwoInterchanges(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for _, ref := range []string{"A", "B"} {
		m := fixtures.IFTMIN("1", [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")
		if err := fixtures.WriteInterchange(&b, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: ref, Msgs: []fixtures.Msg{m}}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "two.edi")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	second := int64(strings.LastIndex(b.String(), "UNH+1+"))
	out, stderr, _ := runCmd(t, "inspect", "--json", path)
	rs := jsonLines(t, out)
	if len(rs) != 2 || rs[0].Interchange != 0 || rs[1].Interchange != 2 || rs[1].Offset == nil || *rs[1].Offset != second || rs[1].Verdict != "accept" {
		t.Fatalf("--json: %+v (stderr %s), want message 1 of interchange 2 at byte %d", rs, stderr, second)
	}
	table, _, _ := runCmd(t, "inspect", path)
	if !strings.Contains(table, path+"#1 ") || !strings.Contains(table, path+"#2#1 ") {
		t.Errorf("table:\n%s", table)
	}
}

// TestContrlAnswersTheInterchangeAtFault: lazaret contrl on a file whose
// second interchange breaks its UNT count answers the second (its UNB's
// reference and sender), not the first.
func TestContrlAnswersTheInterchangeAtFault(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for _, ic := range []fixtures.Interchange{{Sender: "FIRST", Recipient: "R", Ref: "A"}, {Sender: "SECOND", Recipient: "R", Ref: "B"}} {
		m := fixtures.IFTMIN("1", [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")
		if ic.Ref == "B" {
			m.UNTCount = 99
		}
		ic.Msgs = []fixtures.Msg{m}
		if err := fixtures.WriteInterchange(&b, ic); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "two.edi")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, _ := runCmd(t, "contrl", path)
	if !strings.Contains(out, "UCI+B+SECOND:ZZ+R:ZZ+4") || strings.Contains(out, "FIRST") {
		t.Errorf("CONTRL (stderr %s):\n%s", stderr, out)
	}
}

// TestAgencyDirectoryOption: --agency-directory KV=FILE checks the KV
// messages against that directory: the KOTR message passes it without
// the warning it gets with none; a directory file that does not parse,
// or one given for UN, is a configuration error (exit 2) naming it.
func TestAgencyDirectoryOption(t *testing.T) {
	t.Parallel()
	kotr, dir := "../../validate/testdata/agency/kotr-no-bgm.edi", "../../validate/testdata/agency/kv-directory.txt"
	out, stderr, _ := runCmd(t, "inspect", "--json", kotr)
	if rs := jsonLines(t, out); len(rs) != 1 || rs[0].Verdict != "accept" || len(rs[0].Warnings) != 1 || rs[0].Warnings[0].Code != "edifact.directory.unknown" {
		t.Fatalf("without the KV directory: %+v (stderr %s)", rs, stderr)
	}
	out, stderr, _ = runCmd(t, "inspect", "--json", "--agency-directory", "KV="+dir, kotr)
	if rs := jsonLines(t, out); len(rs) != 1 || rs[0].Verdict != "accept" || len(rs[0].Warnings) != 0 {
		t.Errorf("with the KV directory: %+v (stderr %s)", rs, stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(bad, []byte("M 02 001 KOTR 9/1/1\n"), 0o644)
	for _, arg := range []string{"KV=" + bad, "UN=" + dir, "KV=" + filepath.Join(t.TempDir(), "missing.txt")} {
		if _, stderr, code := runCmd(t, "inspect", "--agency-directory", arg, kotr); code != 2 || !strings.Contains(stderr, "agency_directories") {
			t.Errorf("--agency-directory %s: exit %d, stderr %q", arg, code, stderr)
		}
	}
}
