package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
)

// lazaret aperak and contrl on an interchange with an unknown UN/LOCODE
// and a wrong ISO 6346 check digit among good messages: the APERAK names
// both with code and position, --json exits 1; the CONTRL rejects neither
// (exit 0), unless the sender reads CONTRL only, when its --json lists
// every action and code with its position and exits 1.
func TestAperakAndContrlCommands(t *testing.T) {
	t.Parallel()
	in := filepath.Join(testenv.RepoRoot(t), "validate", "testdata", "aperak", "input.edi")
	out, stderr, code := runCmd(t, "aperak", in)
	if code != 0 || !strings.Contains(out, "ERC+LOCUNK::ZZZ'") || !strings.Contains(out, "ERC+CNTRCHK::ZZZ'") {
		t.Errorf("aperak: exit %d %s\n%s", code, stderr, out)
	}
	out, stderr, code = runCmd(t, "aperak", "--json", in)
	var ap aperakJSON
	if err := json.Unmarshal([]byte(out), &ap); err != nil || code != 1 || !ap.Rejected || len(ap.Messages) != 2 {
		t.Fatalf("aperak --json: exit %d %v %s\n%s", code, err, stderr, out)
	}
	for i, want := range []aperakError{
		{Code: "LOCUNK", Rule: "edifact.locode.unknown", Segment: 6, Tag: "LOC", Element: 2, Component: 1},
		{Code: "CNTRCHK", Rule: "edifact.container.check-digit", Segment: 12, Tag: "EQD", Element: 2, Component: 1},
	} {
		got := ap.Messages[i].Errors[0]
		got.Offset, got.Text = 0, ""
		if got != want {
			t.Errorf("aperak --json message %d: %+v, want %+v", i+1, got, want)
		}
	}

	out, _, code = runCmd(t, "contrl", "--json", in)
	var cj contrlJSON
	if err := json.Unmarshal([]byte(out), &cj); err != nil || code != 0 || cj.Rejected || len(cj.Entries) != 1 || cj.Entries[0].Action != "7" {
		t.Errorf("contrl --json (both): exit %d %v\n%s", code, err, out)
	}
	out, _, code = runCmd(t, "contrl", "--json", "--reply-partner", "CARRIER1=contrl", in)
	cj = contrlJSON{}
	if err := json.Unmarshal([]byte(out), &cj); err != nil || code != 1 || !cj.Rejected || cj.Mode != "contrl" {
		t.Fatalf("contrl --json (contrl only): exit %d %v\n%s", code, err, out)
	}
	var ucd []contrlEntry
	for _, e := range cj.Entries {
		if e.Tag == "UCD" {
			ucd = append(ucd, e)
		}
	}
	if len(ucd) != 2 || ucd[0].Ref != "2" || ucd[0].Segment != 6 || ucd[0].Element != 2 || ucd[0].Code != 12 || ucd[0].Offset == nil ||
		ucd[1].Ref != "3" || ucd[1].Segment != 12 || ucd[1].FaultTag != "EQD" {
		t.Errorf("contrl --json UCD entries: %+v", ucd)
	}
	if _, _, code := runCmd(t, "aperak", "--json", "--reply-partner", "CARRIER1=contrl", in); code != 0 {
		t.Errorf("aperak --json for a CONTRL-only sender: exit %d, want 0 (no APERAK)", code)
	}
	// An envelope fault: CONTRL rejects (exit 1 with --json), no APERAK.
	bad := filepath.Join(testenv.RepoRoot(t), "fixtures", "logistics", "unz-mismatch.edi")
	if _, _, code := runCmd(t, "contrl", "--json", bad); code != 1 {
		t.Errorf("contrl --json on an envelope fault: exit %d", code)
	}
	out, _, code = runCmd(t, "aperak", "--json", bad)
	ap = aperakJSON{}
	if err := json.Unmarshal([]byte(out), &ap); err != nil || code != 1 || !ap.InterchangeRejected || ap.Report != "" {
		t.Errorf("aperak --json on an envelope fault: exit %d %v\n%s", code, err, out)
	}
}

// Escape sequences a sender wrote in its references never reach the
// terminal raw from contrl or aperak: their notes on standard error are
// escaped (\x1b), and the report itself, a document, goes byte for byte
// to a pipe (the bytes the worker writes to the outbox, where ESC is %1B)
// and escaped to a terminal (exact).
func TestReplyCommandsAreTerminalSafe(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "validate", "testdata", "aperak", "input.edi"))
	if err != nil {
		t.Fatal(err)
	}
	evil := strings.NewReplacer("+CARRIER1:ZZ+", "+CARRIER\x1b[31m1:ZZ+", "UNH+2+", "UNH+2\x1b]0;x\x07+", "UNT+13+2'", "UNT+13+2\x1b]0;x\x07'").Replace(string(data))
	path := filepath.Join(t.TempDir(), "evil.edi")
	if err := os.WriteFile(path, []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each told the sender reads the other reply only, so that it says so.
	for cmd, other := range map[string]string{"aperak": "contrl", "contrl": "aperak"} {
		out, stderr, _ := runCmd(t, cmd, "--reply-partner", "CARRIER\x1b[31m1="+other, path)
		if rawControl(stderr) >= 0 || !strings.Contains(stderr, `CARRIER\x1b[31m1`) {
			t.Errorf("%s: the note on standard error is not escaped:\n%q", cmd, stderr)
		}
		// The reply itself carries no control character: ESC is written
		// %1B (edifact.Writer.Printable), the bytes the worker writes.
		if cmd == "contrl" && (!strings.Contains(out, "+CARRIER%1B[31m1:ZZ+") || rawControl(out) >= 0) {
			t.Errorf("%s: the report to a pipe is not the reply as written:\n%q", cmd, out)
		}
		out, _, _ = runCmd(t, cmd, "--json", path)
		if rawControl(out) >= 0 {
			t.Errorf("%s --json: raw control bytes:\n%q", cmd, out)
		}
	}
}

// The reply settings: reply_partners from a config file picks a sender's
// mode, contrl_parked is still read (as reply_parked), and a mode that is
// none of both, contrl, aperak is a usage error.
func TestReplySettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	os.WriteFile(cfg, []byte(`{"reply_partners": {"CARRIER1": "aperak"}, "contrl_parked": false, "reply_separators": "standard"}`), 0o644)
	c := defaultConfig()
	if err := c.applyJSON(map[string]json.RawMessage{"reply_partners": json.RawMessage(`{"CARRIER1": "aperak"}`), "contrl_parked": json.RawMessage(`false`)}); err != nil {
		t.Fatal(err)
	}
	if p := c.replies(); p.ModeFor("CARRIER1") != "aperak" || p.ModeFor("OTHER") != "both" || !p.QuietParked {
		t.Errorf("replies %+v", p)
	}
	in := filepath.Join(testenv.RepoRoot(t), "validate", "testdata", "aperak", "input.edi")
	out, stderr, code := runCmd(t, "contrl", "--config", cfg, in)
	if code != 0 || !strings.Contains(stderr, "reads APERAK only") {
		t.Errorf("contrl for an APERAK-only sender: exit %d, stderr %q", code, stderr)
	}
	if !strings.HasPrefix(out, "UNA:+.? '") {
		t.Errorf("standard separators: %s", out)
	}
	for _, args := range [][]string{{"contrl", "--reply-mode", "edi", in}, {"aperak", "--reply-partner", "CARRIER1", in}, {"aperak", "--reply-separators", "mine", in}} {
		if _, stderr, code := runCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
}

// TestSyntax4RepliesMayDeclareTheRepetitionSeparator: with reply_separators
// iso9735-4 a reply to a syntax-4 interchange declares ISO 9735-4's
// repetition separator ('*') in its UNA, and a reply to a syntax-3 one the
// space syntax 3 reserves there. The default keeps the space for both: the
// npm parsers refuse a UNA declaring '*'
// (TestNPMParsersRefuseARepetitionSeparatorInUNA in internal/edicheck).
func TestSyntax4RepliesMayDeclareTheRepetitionSeparator(t *testing.T) {
	dir := t.TempDir()
	const body = "+SENDER:ZZ+LAZARET:ZZ+20261201:1000+IC1'UNH+1+IFTMIN:D:99B:UN'BGM+610+X+9'UNT+3+2'UNZ+1+IC1'"
	for _, c := range []struct {
		syntax, separators, una string
	}{
		{"4", "", "UNA:+.? '"},
		{"4", "iso9735-4", "UNA:+.?*'"},
		{"3", "iso9735-4", "UNA:+.? '"},
		{"4", "standard", "UNA:+.? '"},
	} {
		in := filepath.Join(dir, "s"+c.syntax+".edi")
		if err := os.WriteFile(in, []byte("UNB+UNOC:"+c.syntax+body), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"contrl", in}
		if c.separators != "" {
			args = []string{"contrl", "--reply-separators", c.separators, in}
		}
		out, stderr, code := runCmd(t, args...)
		if code != 0 || !strings.HasPrefix(out, c.una+"\n") || !strings.Contains(out, "UNB+UNOC:"+c.syntax+"+") || !strings.Contains(out, "UCI+IC1+SENDER:ZZ+LAZARET:ZZ+4'") {
			t.Errorf("syntax %s, separators %q: exit %d, want a rejecting CONTRL opening with %s:\n%s%s", c.syntax, c.separators, code, c.una, out, stderr)
		}
	}
}
