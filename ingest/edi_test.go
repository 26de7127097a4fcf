package ingest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// logistics writes the EDI fixture batch and returns the envelope of one of
// its interchanges.
func (b *bundle) logistics(object string) *ingest.Envelope {
	b.t.Helper()
	batch, err := fixtures.WriteLogisticsBatch(filepath.Join(b.dir, "logistics"))
	if err != nil {
		b.t.Fatal(err)
	}
	m, dir, err := validate.ReadManifestFile(batch.Manifest)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, it := range m.Items {
		if it.ObjectID == object {
			path, _ := validate.ResolvePath(dir, it.Path)
			return &ingest.Envelope{V: ingest.EnvelopeVersion, CorrelationID: ingest.CorrelationID(m.BatchID, it.ObjectID, it.SHA256),
				BatchID: m.BatchID, ObjectID: it.ObjectID, Kind: "edifact", Path: path, SHA256: it.SHA256, Item: it, Attempt: 1}
		}
	}
	b.t.Fatalf("no fixture %s", object)
	return nil
}

func messageCorr(env *ingest.Envelope, ref string) string {
	return ingest.CorrelationID(env.BatchID, ingest.MessageObjectID(env.ObjectID, ref), env.SHA256)
}

// messageOutcomes reads from the ledger where the messages of a batch's
// interchanges are, and how often each was settled: a message with events
// of its own is where the last of them with a terminal destination says;
// one held among the members of an ing event (premis.Member) is accepted.
// Each message should be settled once.
func messageOutcomes(t *testing.T, l premis.Ledger, batch string) (where map[string]premis.Destination, settled map[string]int) {
	t.Helper()
	evs, err := l.Events(context.Background(), premis.Filter{BatchID: batch})
	if err != nil {
		t.Fatal(err)
	}
	where, settled = map[string]premis.Destination{}, map[string]int{}
	for _, e := range evs {
		switch {
		case e.Type == premis.Ingestion && len(e.Members) > 0:
			for _, m := range e.Members {
				where[m.ObjectID] = premis.Accepted
				settled[m.ObjectID]++
			}
		case strings.Contains(e.ObjectID, "#") && e.Destination.Terminal():
			where[e.ObjectID] = e.Destination
			settled[e.ObjectID]++
		}
	}
	return where, settled
}

// countEvents counts a batch's events by type.
func countEvents(t *testing.T, l premis.Ledger, batch string) map[premis.EventType]int {
	t.Helper()
	evs, err := l.Events(context.Background(), premis.Filter{BatchID: batch})
	if err != nil {
		t.Fatal(err)
	}
	c := map[premis.EventType]int{}
	for _, e := range evs {
		c[e.Type]++
	}
	return c
}

// wantOnce checks that n messages settled, each once, and that the
// messages in bad (by reference) are where it says, the rest accepted.
func wantOnce(t *testing.T, env *ingest.Envelope, where map[string]premis.Destination, settled map[string]int, n int, bad map[string]premis.Destination) {
	t.Helper()
	if len(where) != n {
		t.Errorf("%d messages settled, want %d", len(where), n)
	}
	for id, c := range settled {
		if c != 1 {
			t.Errorf("message %s settled %d times", id, c)
		}
	}
	for i := 1; i <= n; i++ {
		ref := strconv.Itoa(i)
		want, ok := bad[ref]
		if !ok {
			want = premis.Accepted
		}
		if got := where[ingest.MessageObjectID(env.ObjectID, ref)]; got != want {
			t.Errorf("message %s: %q, want %s", ref, got, want)
		}
	}
}

func TestBrokenEnvelopeIsArchivedOnceWithOffsetAndCONTRL(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.worker.Outbox = filepath.Join(b.dir, "outbox")
	env := b.logistics("edi-unz-mismatch")
	b.start()
	b.enqueue(env)
	ev := b.settled(env.CorrelationID, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	if n := len(b.invocations(env.TaskID())); n != 1 {
		t.Fatalf("handler ran %d times", n)
	}
	data, _ := os.ReadFile(env.Path)
	want := int64(strings.Index(string(data), "UNZ+1+IC0999")) + int64(len("UNZ+1+"))
	if ev.Destination != premis.DeadLetter || ev.Code != "edifact.reference-mismatch" || ev.Offset == nil || *ev.Offset != want || ev.Tag != "UNZ" || ev.Element != 2 {
		t.Fatalf("event %s %s offset %v (want %d) tag %s element %d", ev.Destination, ev.Code, ev.Offset, want, ev.Tag, ev.Element)
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateArchived, 5*time.Second)
	files, _ := filepath.Glob(filepath.Join(b.worker.Outbox, "*.contrl.edi"))
	if len(files) != 1 {
		t.Fatalf("%d CONTRL files", len(files))
	}
	contrl, _ := os.ReadFile(files[0])
	if !strings.Contains(string(contrl), "UCI+IC0004+CARRIER1:ZZ+LAZARET:ZZ+4+28+UNZ+2'") {
		t.Errorf("CONTRL:\n%s", contrl)
	}
	// The event that records the failure names the reply.
	if !strings.Contains(ev.Note, "CONTRL "+filepath.Base(files[0])) {
		t.Errorf("event note %q does not name %s", ev.Note, filepath.Base(files[0]))
	}
	if aperaks, _ := filepath.Glob(filepath.Join(b.worker.Outbox, "*.aperak.edi")); len(aperaks) != 0 {
		t.Errorf("%d APERAK files for an envelope fault", len(aperaks))
	}
}

func TestMixedInterchangeQuarantinesOnlyTheBadMessage(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	env := b.logistics("edi-mixed")
	b.start()
	b.enqueue(env)
	b.settled(env.CorrelationID, 10*time.Second) // its ing comes last
	if ev := b.settled(messageCorr(env, "2"), time.Second); ev.Destination != premis.Quarantined || ev.Code != "edifact.locode.unknown" ||
		ev.Segment != 6 || ev.Offset == nil {
		t.Errorf("message 2: %s %s segment %d offset %v", ev.Destination, ev.Code, ev.Segment, ev.Offset)
	}
	where, settled := messageOutcomes(t, b.ledger, env.BatchID)
	wantOnce(t, env, where, settled, 3, map[string]premis.Destination{"2": premis.Quarantined})
	parked, err := ingest.ListParked(b.insp, ingest.QueueQuarantine)
	if err != nil || len(parked) != 1 || parked[0].Held.Envelope.Message != "2" {
		t.Fatalf("parked %+v %v", parked, err)
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateCompleted, 5*time.Second)
	// The summary operators read (submit --wait, batch status, the API)
	// says the accepted interchange has a parked message. Before, it read
	// "1 accepted, messages 2/3 accepted".
	p, err := ingest.BatchProgress(context.Background(), b.ledger, env.BatchID)
	if err != nil {
		t.Fatal(err)
	}
	if p.ParkedMessages != 1 || p.WithParked != 1 || !strings.Contains(p.Tally(), "1 accepted (1 with parked messages)") ||
		!strings.Contains(p.Tally(), "messages 2/3 accepted, 1 quarantined") {
		t.Errorf("progress: parked %d in %d, tally %q", p.ParkedMessages, p.WithParked, p.Tally())
	}
}

func TestReconcileReplaysOnceTheRegistryKnowsTheCode(t *testing.T) {
	t.Parallel()
	part2 := filepath.Join(testenv.Corpus(t, "registries", "unlocode"), "2024-2_UNLOCODE_CodeListPart2.csv")
	b := setup(t, fastPolicy())
	env := b.logistics("edi-unknown-locode")
	b.start()
	b.enqueue(env)
	corr := messageCorr(env, "1")
	qua := b.settled(corr, 10*time.Second)
	if qua.Code != "edifact.locode.unknown" || !strings.Contains(qua.Detail, "UN/LOCODE@") {
		t.Fatalf("first outcome %s %q", qua.Code, qua.Detail)
	}
	ctx := context.Background()
	// Same registry: nothing to do.
	ds, err := b.ops().ReconcileQuarantine(ctx, ingest.ReconcileOptions{})
	if err != nil || len(ds) != 1 || ds[0].Action != "unchanged-registry" {
		t.Fatalf("reconcile before the refresh: %+v %v", ds, err)
	}
	// The refreshed UN/LOCODE list has NLVLI.
	b.worker.Registries = &validate.RegistryStore{LOCODEFiles: []string{part2}}
	ds, err = b.ops().ReconcileQuarantine(ctx, ingest.ReconcileOptions{})
	if err != nil || len(ds) != 1 || ds[0].Action != "replayed" {
		t.Fatalf("reconcile after the refresh: %+v %v", ds, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var types []premis.EventType
	for time.Now().Before(deadline) {
		types = types[:0]
		for _, e := range b.events(corr) {
			types = append(types, e.Type)
		}
		if len(types) > 0 && types[len(types)-1] == premis.Ingestion {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := []premis.EventType{premis.Quarantine, premis.Unquarantine, premis.Validation, premis.Ingestion}
	if strings.Join(toStrings(types), ",") != strings.Join(toStrings(want), ",") {
		t.Fatalf("chain %v, want %v", types, want)
	}
	evs := b.events(corr)
	if evs[1].ReplayOf != qua.ID || evs[3].Attempt != 2 || evs[3].ReplayOf != qua.ID {
		t.Errorf("lineage: unq replay_of %s, ing attempt %d replay_of %s, want %s", evs[1].ReplayOf, evs[3].Attempt, evs[3].ReplayOf, qua.ID)
	}
	if parked, _ := ingest.ListParked(b.insp, ingest.QueueQuarantine); len(parked) != 0 {
		t.Errorf("%d still parked", len(parked))
	}
	// Running it again replays nothing: accepted exactly once.
	if ds, err := b.ops().ReconcileQuarantine(ctx, ingest.ReconcileOptions{}); err != nil || len(ds) != 0 {
		t.Errorf("second reconcile: %+v %v", ds, err)
	}
	time.Sleep(300 * time.Millisecond)
	ings := 0
	for _, e := range b.events(corr) {
		if e.Type == premis.Ingestion {
			ings++
		}
	}
	if ings != 1 {
		t.Errorf("%d ing events, want exactly 1", ings)
	}
}

func toStrings(ts []premis.EventType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// TestLargeInterchangeIsRoutedInChunks: 600 messages, one bad one in the
// middle; events are written a chunk at a time and every message settles
// exactly once.
func TestLargeInterchangeIsRoutedInChunks(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	env := bigInterchange(b, "big")
	b.start()
	b.enqueue(env)
	b.settled(env.CorrelationID, 30*time.Second) // its ing comes last: everything before it is recorded
	// Three chunks (256, 256, 88 messages): a val and an ing event each,
	// holding the accepted messages; the interchange's fixity and ing.
	if c := countEvents(t, b.ledger, "big"); c[premis.Ingestion] != 4 || c[premis.Validation] != 3 || c[premis.Quarantine] != 1 || c[premis.FixityCheck] != 1 {
		t.Errorf("events %v", c)
	}
	where, settled := messageOutcomes(t, b.ledger, "big")
	wantOnce(t, env, where, settled, 600, map[string]premis.Destination{"300": premis.Quarantined})
	// Batch status lists and counts the members; ItemOutcome finds one.
	ctx := context.Background()
	st, err := ingest.BatchStatus(ctx, b.ledger, "big")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[premis.Destination]int{}
	for _, it := range st {
		listed[it.Destination]++
	}
	if listed[premis.Accepted] != 600 || listed[premis.Quarantined] != 1 || len(st) != 601 { // 599 messages and the interchange
		t.Errorf("batch status lists %v (%d items), want 600 accepted (599 messages, the interchange) and 1 quarantined", listed, len(st))
	}
	if p, err := ingest.BatchProgress(ctx, b.ledger, "big"); err != nil || p.Messages.Accepted != 599 || p.Messages.Quarantine != 1 {
		t.Errorf("batch progress: %+v %v, want 599 messages accepted and 1 quarantined", p, err)
	}
	for ref, want := range map[string]premis.Destination{"1": premis.Accepted, "599": premis.Accepted, "300": premis.Quarantined} {
		o, ok, err := ingest.ItemOutcome(ctx, b.ledger, "big", ingest.MessageObjectID("big", ref), env.SHA256)
		if err != nil || !ok || o.Destination != want || (want == premis.Accepted) != (o.Member != nil) {
			t.Errorf("message %s: %+v ok %v %v, want %s", ref, o, ok, err, want)
		}
	}
	if _, ok, err := ingest.ItemOutcome(ctx, b.ledger, "big", ingest.MessageObjectID("big", "601"), env.SHA256); ok || err != nil {
		t.Errorf("message 601 (there is none): ok %v %v", ok, err)
	}
	parked, _ := ingest.ListParked(b.insp, ingest.QueueQuarantine)
	if len(parked) != 1 || parked[0].Held.Envelope.Message != "300" {
		t.Errorf("parked %+v", parked)
	}
}

// bigInterchange writes 600 messages, message 300 with an unknown port.
func bigInterchange(b *bundle, batch string) *ingest.Envelope {
	b.t.Helper()
	var msgs []fixtures.Msg
	for i := 1; i <= 600; i++ {
		port := "SGSIN"
		if i == 300 {
			port = "NLZZZ"
		}
		msgs = append(msgs, fixtures.IFTMIN(strconv.Itoa(i), [2]string{"CZ", "CN"}, "NLRTM", port, fixtures.ContainerOK2, "847130"))
	}
	var buf bytes.Buffer
	if err := fixtures.WriteInterchange(&buf, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "BIG", Msgs: msgs}); err != nil {
		b.t.Fatal(err)
	}
	path, sha := b.file(batch+".edi", buf.Bytes())
	return &ingest.Envelope{V: ingest.EnvelopeVersion, CorrelationID: ingest.CorrelationID(batch, "big", sha), BatchID: batch, ObjectID: "big",
		Kind: "edifact", Path: path, SHA256: sha, Attempt: 1, Item: validate.Item{ObjectID: "big", Kind: "edifact", Path: batch + ".edi", SHA256: sha}}
}

// TestDrainStopsAtACheckpointAndResumes: a worker asked to drain stops an
// interchange between two chunks; the next worker resumes it, skipping the
// recorded chunk, and every message settles exactly once. Before, a long
// interchange was cut off by the drain timeout and redone from scratch
// with a new attempt number: 152,064 messages got two ing events.
func TestDrainStopsAtACheckpointAndResumes(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	env := bigInterchange(b, "drain")
	b.worker.Drain() // before the task starts: it stops after its first chunk
	srv, mux := ingest.NewServer(b.opt, b.worker, ingest.ServerConfig{Concurrency: 1, PollInterval: 50 * time.Millisecond, ShutdownTimeout: 5 * time.Second})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	b.enqueue(env)
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateRetry, 15*time.Second)
	srv.Shutdown()
	if where, _ := messageOutcomes(t, b.ledger, "drain"); len(where) != 256 {
		t.Fatalf("at the checkpoint: %d messages settled, want the first chunk of 256", len(where))
	}
	if c := countEvents(t, b.ledger, "drain"); c[premis.Ingestion] != 1 || c[premis.FixityCheck] != 1 {
		t.Fatalf("at the checkpoint: %v, want the fixity and the first chunk's val and ing", c)
	}
	// A fresh worker (not draining) picks it up.
	old := b.worker
	b.worker = &ingest.Worker{Ledger: old.Ledger, Broker: old.Broker, Policy: old.Policy, Master: old.Master, Software: old.Software,
		Logger: old.Logger, Observe: old.Observe}
	b.start()
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateCompleted, 30*time.Second)
	if c := countEvents(t, b.ledger, "drain"); c[premis.Ingestion] != 4 || c[premis.Quarantine] != 1 || c[premis.Validation] != 3 || c[premis.FixityCheck] != 1 {
		t.Errorf("after the resume: %v, want three chunks, the interchange accepted and 1 quarantined, once each", c)
	}
	where, settled := messageOutcomes(t, b.ledger, "drain")
	wantOnce(t, env, where, settled, 600, map[string]premis.Destination{"300": premis.Quarantined})
	if parked, _ := ingest.ListParked(b.insp, ingest.QueueQuarantine); len(parked) != 1 || parked[0].Held.EventID == "" {
		t.Errorf("parked %+v", parked)
	}
}

// TestUncheckedRepertoireIsRecorded: an interchange in UNOZ (bytes as the
// partners agreed) is accepted, and its ingestion event says the
// repertoire was not checked: an archive reading the ledger learns it.
func TestUncheckedRepertoireIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	env := b.logistics("edi-iftmin-good")
	data, err := os.ReadFile(env.Path)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("UNB+UNOC:"), []byte("UNB+UNOZ:"), 1)
	if !bytes.Contains(data, []byte("UNB+UNOZ:")) {
		t.Fatalf("no UNOC syntax identifier in the fixture:\n%s", data)
	}
	env.Path, env.SHA256 = b.file("iftmin-unoz.edi", data)
	env.Item.SHA256, env.Item.Size = env.SHA256, int64(len(data))
	env.CorrelationID = ingest.CorrelationID(env.BatchID, env.ObjectID, env.SHA256)
	b.start()
	b.enqueue(env)
	ev := b.settled(env.CorrelationID, 10*time.Second)
	if ev.Destination != premis.Accepted || ev.Type != premis.Ingestion || !strings.Contains(ev.Note, "edifact.charset.unchecked") {
		t.Errorf("UNOZ interchange: %s %s, note %q", ev.Type, ev.Destination, ev.Note)
	}
}
