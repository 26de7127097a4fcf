package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// hostile is what a submitter can put in a terminal: a colour, a title
// (OSC ... BEL), a carriage return that overwrites the line, a NUL, DEL, a
// C1 CSI and a right-to-left override.
const hostile = "\x1b[31mRED\x1b[0m\x1b]0;pwned\x07\rCR\x00NUL\x7f\u009b2J\u202e"

// hostileName is hostile as a file name can carry it: no NUL.
var hostileName = strings.ReplaceAll(hostile, "\x00", "")

// rawControl is the first byte of out that a terminal would act on: below
// 0x20 but newline and tab, or DEL; -1 when there is none.
func rawControl(out string) int {
	for i := 0; i < len(out); i++ {
		if c := out[i]; c == 0x7f || (c < 0x20 && c != '\n' && c != '\t') {
			return i
		}
	}
	return -1
}

func TestSafeText(t *testing.T) {
	t.Parallel()
	got := safeText(hostile)
	want := `\x1b[31mRED\x1b[0m\x1b]0;pwned\x07\x0dCR\x00NUL\u007f\u009b2J\u202e`
	if got != want {
		t.Errorf("safeText:\n got %s\nwant %s", got, want)
	}
	for _, s := range []string{"plain ascii\n\ttab", "Zürich ⏎ 北京", ""} {
		if got := safeText(s); got != s {
			t.Errorf("safeText(%q) = %q, want it unchanged", s, got)
		}
	}
	if got := safeText("a\x9bb"); got != `a\x9bb` { // a lone C1 byte, not UTF-8
		t.Errorf("lone 0x9b: %q", got)
	}
}

// TestCleanEveryByte: clean, which looks at eight bytes at a time, finds
// every byte a terminal must not get raw, at every position of a word and
// beside every other byte.
func TestCleanEveryByte(t *testing.T) {
	t.Parallel()
	want := func(c byte) bool { return c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f) }
	for c := range 256 {
		for _, other := range []byte{'a', ' ', '~', '\n', 0x00, 0x1f, 0x7f, 0x80, 0xff} {
			for n := 1; n <= 17; n++ {
				for at := range n {
					b := bytes.Repeat([]byte{other}, n)
					b[at] = byte(c)
					w := want(byte(c)) && (n == 1 || want(other))
					if got := clean(b); got != w {
						t.Fatalf("clean(%q) = %v, want %v", b, got, w)
					}
					if got := clean(string(b)); got != w {
						t.Fatalf("clean(string %q) = %v, want %v", b, got, w)
					}
				}
			}
		}
	}
}

// TestSafeWriterKeepsJSON: JSON written through the writer decodes to the
// same value, so --json and the logs stay JSON; a UTF-8 sequence split
// across writes is escaped as one character.
func TestSafeWriterKeepsJSON(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := newSafeWriter(&buf)
	in := map[string]string{"id": hostile, "name": "Zürich"}
	if err := writeJSON(w, in); err != nil {
		t.Fatal(err)
	}
	if i := rawControl(buf.String()); i >= 0 {
		t.Errorf("raw control byte at %d: %q", i, buf.String())
	}
	var out map[string]string
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil || out["id"] != hostile || out["name"] != "Zürich" {
		t.Errorf("through the writer: %v %q", err, buf.String())
	}
	buf.Reset()
	c1 := []byte("x\u009by")
	w.Write(c1[:2]) // "x" and the first byte of U+009B
	w.Write(c1[2:])
	w.Flush()
	if buf.String() != `x\u009by` {
		t.Errorf("split C1: %q", buf.String())
	}
}

// TestHumanOutputIsTerminalSafe feeds ids, a UNH reference, file names
// and manifest values carrying ESC, OSC, BEL, CR, NUL and DEL through a
// real worker, then through every command that prints them: no raw
// control byte reaches stdout or stderr. Before, submit echoed refused
// ids raw and the inspect table printed UNH references raw.
func TestHumanOutputIsTerminalSafe(t *testing.T) {
	url := testenv.Redis(t, redisDB)
	dir := t.TempDir()
	batchDir := filepath.Join(dir, "batch")
	arch, err := fixtures.WriteArchiveBatch(batchDir)
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(arch.Dir, "good-single.tif"))
	if err != nil {
		t.Fatal(err)
	}
	var ic bytes.Buffer
	ref := "1" + hostile
	msg := fixtures.IFTMIN(ref, [2]string{"CZ", "CN"}, "NLRTM", "NLVLI", "MSKU9070323", "847130")
	if err := fixtures.WriteInterchange(&ic, fixtures.Interchange{Syntax: "UNOC", Sender: "CARRIER" + hostile, Recipient: "LAZARET", Ref: "IC" + hostile, Msgs: []fixtures.Msg{msg}}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"evil" + hostileName + ".edi":  ic.Bytes(),
		"trunc" + hostileName + ".tif": good[:len(good)/2],
		"dpi.tif":                      good,
	}
	type item struct {
		ObjectID      string `json:"object_id"`
		Kind          string `json:"kind"`
		Path          string `json:"path"`
		SHA256        string `json:"sha256"`
		ColorProfile  string `json:"color_profile,omitempty"`
		ResolutionDPI string `json:"resolution_dpi,omitempty"`
	}
	var items []item
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(batchDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		it := item{ObjectID: "obj-" + fmt.Sprint(len(items)), Kind: "tiff", Path: name, SHA256: hex.EncodeToString(sum[:]), ColorProfile: "sRGB" + hostile, ResolutionDPI: "400"}
		switch {
		case strings.HasSuffix(name, ".edi"):
			it.Kind, it.ColorProfile, it.ResolutionDPI = "edifact", "", ""
		case name == "dpi.tif":
			it.ResolutionDPI = "400" + hostile
		}
		items = append(items, it)
	}
	writeManifest := func(name, batch string, items []item) string {
		b, _ := json.Marshal(map[string]any{"batch_id": batch, "submitter": "tester", "items": items})
		p := filepath.Join(batchDir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	manifest := writeManifest("hostile.json", "hostile-1", items)
	badIDs := writeManifest("bad-ids.json", "hostile-2", []item{{ObjectID: "esc" + hostile, Kind: "tiff", Path: "dpi.tif", SHA256: items[0].SHA256}})
	ledger := filepath.Join(dir, "ledger.db")
	common := []string{"--redis", url, "--ledger", ledger}

	check := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		err := run(context.Background(), args, &out, &errb)
		if err != nil { // printed as main prints it
			var ee *exitError
			if !errors.As(err, &ee) || ee.err != nil {
				w := newSafeWriter(&errb)
				fmt.Fprintln(w, "lazaret:", err)
				w.Flush()
			}
		}
		for name, s := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
			if i := rawControl(s); i >= 0 {
				t.Errorf("%v: raw control byte 0x%02x in %s at %d:\n%q", args[:min(len(args), 2)], s[i], name, i, s[max(0, i-40):min(len(s), i+40)])
			}
		}
		return out.String() + errb.String()
	}
	if out := check(append([]string{"submit"}, append(common, badIDs)...)...); !strings.Contains(out, `esc\x1b[31mRED`) {
		t.Errorf("submit of a refused id: the id is not shown escaped:\n%s", out)
	}
	check(append([]string{"submit", "--dry-run"}, append(common, manifest)...)...)
	check(append([]string{"submit"}, append(common, manifest)...)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Setenv("LAZARET_LOG_LEVEL", "error")
	go func() {
		done <- run(ctx, append([]string{"worker", "--retry-base", "100ms"}, common...), &bytes.Buffer{}, &bytes.Buffer{})
	}()
	defer func() { cancel(); <-done }()
	l, err := sqlite.Open(context.Background(), ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	deadline := time.Now().Add(30 * time.Second)
	var failures []string
	for {
		evs, err := l.Events(context.Background(), premis.Filter{BatchID: "hostile-1", Latest: true})
		if err != nil {
			t.Fatal(err)
		}
		settled := 0
		failures = failures[:0]
		for _, e := range evs {
			if e.Destination.Terminal() {
				settled++
			}
			if e.Destination == premis.DeadLetter || e.Destination == premis.Quarantined {
				failures = append(failures, e.ID)
			}
		}
		if settled >= len(items)+1 { // the items and the interchange's message
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d settled: %v", settled, len(items)+1, evs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(failures) < 3 {
		t.Fatalf("want the truncated master, the dpi item and the message failed, got %d failures", len(failures))
	}
	var all strings.Builder
	for _, args := range [][]string{
		{"dlq", "ls"}, {"quarantine", "ls"}, {"hold", "ls"}, {"dlq", "ls", "--json"}, {"quarantine", "ls", "--json"},
	} {
		all.WriteString(check(append(args, common...)...))
	}
	for _, args := range [][]string{
		{"events", "ls"}, {"events", "ls", "--json"}, {"batch", "status", "hostile-1"}, {"batch", "status", "--json", "hostile-1"},
		{"ledger", "verify"},
	} {
		all.WriteString(check(append(args, "--ledger", ledger)...))
	}
	for _, id := range failures {
		for _, q := range []string{"dlq", "quarantine"} {
			all.WriteString(check(append([]string{q, "show", id}, common...)...))
			all.WriteString(check(append([]string{q, "show", "--json", id}, common...)...))
		}
		all.WriteString(check(append([]string{"dlq", "replay", "--dry-run", "--operator", "op" + hostile, "--reason", "r" + hostile, id}, common...)...))
	}
	all.WriteString(check("inspect", "--batch", manifest))
	all.WriteString(check("inspect", "--json", "--batch", manifest))
	for name := range files {
		all.WriteString(check("inspect", filepath.Join(batchDir, name)))
	}
	all.WriteString(check("contrl", "--json", filepath.Join(batchDir, "evil"+hostileName+".edi")))
	all.WriteString(check("aperak", "--json", filepath.Join(batchDir, "evil"+hostileName+".edi")))
	all.WriteString(check(append([]string{"submit"}, append(common, manifest)...)...)) // settled: not resubmitted, with reasons
	// The hostile strings did reach the output, escaped: the checks above
	// looked at something.
	for _, want := range []string{`\x1b]0;pwned\x07`, `trunc\x1b[31m`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("no command printed %s: the test printed nothing hostile", want)
		}
	}
}

// TestWaitVerdictCountsParkedMessages: submit --wait exits 1 and says so
// when an accepted interchange left messages parked, not only when an item
// failed.
func TestWaitVerdictCountsParkedMessages(t *testing.T) {
	t.Parallel()
	p := &ingest.Progress{BatchID: "b", Expected: 13, Recorded: 13, Done: 13, Failed: 0, ParkedMessages: 7, WithParked: 2,
		ByDestination: ingest.Counts{Accepted: 13}, Messages: ingest.Counts{Accepted: 5, Quarantine: 7}}
	err := waitVerdict(p)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), "7 messages of 2 accepted interchanges are parked") {
		t.Errorf("verdict: %v", err)
	}
	if got := p.Summary(); !strings.Contains(got, "13 accepted (2 with parked messages), messages 5/12 accepted, 7 quarantined") {
		t.Errorf("summary %q", got)
	}
	p.ParkedMessages, p.WithParked, p.Messages = 0, 0, ingest.Counts{}
	if err := waitVerdict(p); err != nil {
		t.Errorf("nothing failed or parked: %v", err)
	}
}
