package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// contrlSetup writes the logistics batch and returns a worker with an
// outbox and the envelope of object at attempt 1.
func contrlSetup(t *testing.T, object string) (*Worker, *Envelope) {
	t.Helper()
	dir := t.TempDir()
	batch, err := fixtures.WriteLogisticsBatch(filepath.Join(dir, "logistics"))
	if err != nil {
		t.Fatal(err)
	}
	m, mdir, err := validate.ReadManifestFile(batch.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range m.Items {
		if it.ObjectID == object {
			path, _ := validate.ResolvePath(mdir, it.Path)
			env := &Envelope{V: EnvelopeVersion, BatchID: m.BatchID, ObjectID: it.ObjectID, Kind: "edifact", Path: path, SHA256: it.SHA256,
				Item: it, Attempt: 1, SubmittedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
			return &Worker{Outbox: filepath.Join(dir, "outbox")}, env
		}
	}
	t.Fatalf("no fixture %s", object)
	return nil, nil
}

func contrlFiles(t *testing.T, w *Worker) map[string]string {
	t.Helper()
	return outboxFiles(t, w, "contrl")
}

// outboxFiles are the replies of that kind in w's outbox, by name.
func outboxFiles(t *testing.T, w *Worker, kind string) map[string]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(w.Outbox, "*."+kind+".edi"))
	out := map[string]string{}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// A redelivery writes the same bytes; another attempt another reference.
func TestContrlRedeliverySameBytes(t *testing.T) {
	t.Parallel()
	w, env := contrlSetup(t, "edi-unt-count")
	r := w.execute(context.Background(), &delivery{env: env, attempt: 1})
	if !r.replies {
		t.Fatal("a rejected interchange gets no CONTRL")
	}
	for range 2 {
		if _, err := w.writeReplies(context.Background(), env, r.ires, r.cause, 1); err != nil {
			t.Fatal(err)
		}
	}
	first := contrlFiles(t, w)
	if _, err := w.writeReplies(context.Background(), env, r.ires, r.cause, 1); err != nil {
		t.Fatal(err)
	}
	if again := contrlFiles(t, w); len(again) != 1 || again[contrlName(env, 1)] != first[contrlName(env, 1)] {
		t.Fatalf("redelivery wrote other bytes:\n%v\n%v", first, again)
	}
	if contrlRef("", env, 1) == contrlRef("", env, 2) {
		t.Error("attempts 1 and 2 share a control reference")
	}
	other := *env
	other.ObjectID, other.SHA256 = "edi-other", strings.Repeat("0", 64)
	if contrlRef("", env, 1) == contrlRef("", &other, 1) {
		t.Error("two interchanges share a control reference")
	}
	got := first[contrlName(env, 1)]
	for _, want := range []string{"UNB+UNOC:3+LAZARET:ZZ+CARRIER1:ZZ+261201:0900+" + contrlRef("", env, 1) + "'", "UCI+IC0005+CARRIER1:ZZ+LAZARET:ZZ+4'",
		"UCM+1+IFTMIN:D:99B:UN+4+29+UNT+1'"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
}

// An accepted interchange gets a CONTRL only when its UNB asks (0031 = 1)
// or when a message was parked for its syntax; a message parked by a
// business rule gets an APERAK (by default), or a UCM rejection for a
// partner that reads CONTRL only; never an acknowledgement.
func TestContrlForAcceptedInterchanges(t *testing.T) {
	t.Parallel()
	w, good := contrlSetup(t, "edi-iftmin-good")
	if r := w.execute(context.Background(), &delivery{env: good, attempt: 1}); !r.perMessage || r.replies {
		t.Fatalf("accepted without 0031: perMessage %v contrl %v", r.perMessage, r.replies)
	}
	data, _ := os.ReadFile(good.Path)
	asks := filepath.Join(filepath.Dir(good.Path), "asks.edi")
	os.WriteFile(asks, []byte(strings.Replace(string(data), "+IC0002'", "+IC0002++++1'", 1)), 0o644)
	ask := *good
	ask.Path, ask.ObjectID, ask.Item.SHA256, ask.SHA256, ask.Item.Size = asks, "edi-asks", "", "", 0
	r := w.execute(context.Background(), &delivery{env: &ask, attempt: 1})
	if !r.perMessage || !r.replies {
		t.Fatalf("0031 = 1: perMessage %v contrl %v (%v)", r.perMessage, r.replies, r.cause)
	}
	if _, err := w.writeReplies(context.Background(), &ask, r.ires, r.cause, 1); err != nil {
		t.Fatal(err)
	}
	got := contrlFiles(t, w)[contrlName(&ask, 1)]
	// UCI action 7 acknowledges the interchange and every message it does
	// not name: no UCM for accepted messages (the report stays bounded).
	if strings.Contains(got, "UCM+") {
		t.Errorf("a UCM in the positive CONTRL of an interchange with no parked message:\n%s", got)
	}
	for _, want := range []string{"UCI+IC0002+CARRIER1:ZZ+LAZARET:ZZ+7'"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}

	_, low := contrlSetup(t, "edi-vgm-low")
	w.Replies.QuietParked = true
	if r := w.execute(context.Background(), &delivery{env: low, attempt: 1}); r.replies {
		t.Fatal("QuietParked: a parked message sends a reply")
	}
	w.Replies.QuietParked = false
	r = w.execute(context.Background(), &delivery{env: low, attempt: 1})
	if !r.replies {
		t.Fatal("no reply for a parked message")
	}
	sent, err := w.writeReplies(context.Background(), low, r.ires, r.cause, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent.contrl != "" || sent.aperak != replyName(low, 1, "aperak") || !sent.aperakMsgs[1] {
		t.Fatalf("VGM below the floor: replies %+v, want an APERAK only", sent)
	}
	got = outboxFiles(t, w, "aperak")[sent.aperak]
	for _, want := range []string{"UNH+1+APERAK:D:01B:UN'", "RFF+ACW:1'", "RFF+ZZZ:IC0010'", "ERC+VGMBAD::ZZZ'", "FTX+AAO+++segment 7 (MEA), element 3, component 2, byte ", "RFF+ACW:1:7'"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if note := sent.noteFor(1); !strings.Contains(note, "APERAK "+sent.aperak) || strings.Contains(note, "CONTRL") {
		t.Errorf("note %q", note)
	}

	// A partner that reads CONTRL only: its UCM rejects the message.
	w.Replies.Partners = map[string]validate.ReplyMode{"CARRIER1": validate.ReplyContrl}
	if sent, err = w.writeReplies(context.Background(), low, r.ires, r.cause, 1); err != nil {
		t.Fatal(err)
	}
	if sent.contrl == "" || sent.aperak != "" {
		t.Fatalf("CONTRL only: replies %+v", sent)
	}
	got = contrlFiles(t, w)[contrlName(low, 1)]
	for _, want := range []string{"UCI+IC0010+CARRIER1:ZZ+LAZARET:ZZ+7'", "UCM+1+VERMAS:D:16A:UN+4'", "UCS+7'", "UCD+12+3:2'"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
}

// A CONTRL that rejects the interchange because it could not name every
// rejected message (ContrlReport.Unlisted) rejects each message with it:
// the failure event of a message it does not name still names it.
func TestUnlistedContrlIsNamedByEveryParkedMessage(t *testing.T) {
	t.Parallel()
	rs := replies{contrl: "c.contrl.edi", contrlMsgs: map[int]bool{1: true}}
	if note := rs.noteFor(10001); note != "" {
		t.Fatalf("a CONTRL that acknowledges the interchange is named by a message it does not list: %q", note)
	}
	rs.contrlAll = true
	if note := rs.noteFor(10001); !strings.Contains(note, "CONTRL c.contrl.edi") {
		t.Errorf("note %q", note)
	}
}

// An interchange in a syntax identifier Lazaret does not read (UNOQ) is
// parked, not dead-lettered, but it is refused all the same: the sender
// gets a CONTRL rejecting the interchange with 0085 code 2 at UNB S001.
func TestUnsupportedSyntaxGetsARejectingContrl(t *testing.T) {
	t.Parallel()
	w, good := contrlSetup(t, "edi-iftmin-good")
	data, _ := os.ReadFile(good.Path)
	if !strings.Contains(string(data), "UNB+UNOC:3+") {
		t.Fatalf("fixture changed: %.80s", data)
	}
	path := filepath.Join(filepath.Dir(good.Path), "unoq.edi")
	os.WriteFile(path, []byte(strings.Replace(string(data), "UNB+UNOC:3+", "UNB+UNOQ:3+", 1)), 0o644)
	env := *good
	env.Path, env.ObjectID, env.Item.SHA256, env.SHA256, env.Item.Size = path, "edi-unoq", "", "", 0
	r := w.execute(context.Background(), &delivery{env: &env, attempt: 1})
	if r.perMessage || !r.replies || r.decision.Class != premis.Semantic {
		t.Fatalf("UNOQ: perMessage %v replies %v class %s (%v)", r.perMessage, r.replies, r.decision.Class, r.cause)
	}
	if _, err := w.writeReplies(context.Background(), &env, r.ires, r.cause, 1); err != nil {
		t.Fatal(err)
	}
	got := contrlFiles(t, w)[contrlName(&env, 1)]
	if want := "UCI+IC0002+CARRIER1:ZZ+LAZARET:ZZ+4+2+UNB+1:1'"; !strings.Contains(got, want) {
		t.Errorf("CONTRL:\n%s\nwant %q", got, want)
	}
}
