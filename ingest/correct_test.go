package ingest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// TestReplayCorrectsManifestFields: an item quarantined for a metadata
// mistake (no color_profile) is replayed with the field corrected and
// accepted; the replay records what was corrected; corrections the
// manifest's rules refuse, unknown fields and fields that name the item
// are refused before anything is recorded.
func TestReplayCorrectsManifestFields(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.start()
	ctx := context.Background()
	m, dir := b.manifest(1)
	m.Items[0].ColorProfile = ""
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	corr := ingest.CorrelationID(m.BatchID, m.Items[0].ObjectID, m.Items[0].SHA256)
	failed := b.settled(corr, 15*time.Second)
	if failed.Destination != premis.Quarantined {
		t.Fatalf("without a color profile: %s (%s)", failed.Destination, failed.Message)
	}
	ops := b.ops()
	for set, want := range map[string]string{
		"object_id=x":       "names the item",
		"path=other.tif":    "--file",
		"colour_profile=x":  "no such manifest field",
		"sha256=not-hex":    "rules",
		"resolution_dpi=ab": "rules",
	} {
		k, v, _ := strings.Cut(set, "=")
		if _, err := ops.Replay(ctx, failed.ID, ingest.ReplayOptions{Operator: "ana", Set: map[string]string{k: v}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s: %v, want an error about %q", set, err, want)
		}
	}
	if f, err := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{}); err != nil || len(f) != 1 {
		t.Fatalf("refused corrections must leave the failure open: %d open, %v", len(f), err)
	}
	res, err := ops.Replay(ctx, failed.ID, ingest.ReplayOptions{Operator: "ana", Set: map[string]string{"color_profile": "sRGB"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Event.Note, `corrected color_profile="sRGB"`) || res.Replay.Item.ColorProfile != "sRGB" {
		t.Errorf("replay event note %q, item %+v", res.Event.Note, res.Replay.Item)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		evs, err := b.ledger.Events(ctx, premis.Filter{CorrelationID: corr, Latest: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 1 && evs[0].Attempt == 2 && evs[0].Destination.Terminal() {
			if evs[0].Destination != premis.Accepted {
				t.Fatalf("corrected replay: %s (%s)", evs[0].Destination, evs[0].Message)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the corrected replay did not settle: %+v", evs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBulkReplayByCode: twelve items quarantined for the same missing
// field are replayed with one correction by one bulk action, after a dry
// run that lists them and changes nothing; an item of another batch with
// the same code is left alone.
func TestBulkReplayByCode(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.start()
	ctx := context.Background()
	m, dir := b.manifest(13)
	for i := range m.Items {
		m.Items[i].ColorProfile = ""
	}
	other := &validate.Manifest{BatchID: "other", Submitter: m.Submitter, Items: m.Items[12:]}
	m.Items = m.Items[:12]
	for _, mf := range []*validate.Manifest{m, other} {
		if _, err := ingest.Submit(ctx, b.ledger, b.client, mf, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
			t.Fatal(err)
		}
		for _, it := range mf.Items {
			b.settled(ingest.CorrelationID(mf.BatchID, it.ObjectID, it.SHA256), 15*time.Second)
		}
	}
	open, err := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{})
	if err != nil || len(open) != 13 {
		t.Fatalf("%d open failures, want 13: %v", len(open), err)
	}
	opt := ingest.BulkOptions{Filter: ingest.FailureFilter{BatchID: m.BatchID, Code: open[0].Code}, Action: "replay", Operator: "ana",
		Set: map[string]string{"color_profile": "sRGB"}, Rate: 1000, DryRun: true}
	dry, err := b.ops().Bulk(ctx, opt)
	if err != nil || len(dry) != 12 {
		t.Fatalf("dry run: %d decisions: %v", len(dry), err)
	}
	if still, _ := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{}); len(still) != 13 {
		t.Fatalf("a dry run resolved %d failures", 13-len(still))
	}
	opt.DryRun = false
	done, err := b.ops().Bulk(ctx, opt)
	if err != nil || len(done) != 12 {
		t.Fatalf("bulk replay: %d decisions: %v", len(done), err)
	}
	for _, d := range done {
		if d.Action != "replay" {
			t.Errorf("%s: %s %s", d.Failure.ObjectID, d.Action, d.Detail)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := ingest.BatchProgress(ctx, b.ledger, m.BatchID)
		if err != nil {
			t.Fatal(err)
		}
		if p.ByDestination.Of(premis.Accepted) == 12 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the bulk replay: %+v", p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if left, _ := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{}); len(left) != 1 || left[0].BatchID != "other" {
		t.Fatalf("left open: %+v", left)
	}
}

// TestResubmittedChangedEntryIsReplayed: a manifest corrected and
// submitted again — a color_profile added, a wrong sha256 fixed — replays
// each changed failure as a new attempt of the same object (same
// correlation, replay_of the failure) instead of skipping it, or of
// starting a second item for a changed digest; the batch keeps its count.
// Without a replayer the changed items are reported, not dropped.
func TestResubmittedChangedEntryIsReplayed(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.start()
	ctx := context.Background()
	m, dir := b.manifest(3)
	good := m.Items
	bad := append([]validate.Item(nil), good...)
	bad[0].ColorProfile = ""
	bad[2].SHA256 = strings.Repeat("0", 64)
	wrong := &validate.Manifest{BatchID: m.BatchID, Submitter: m.Submitter, Items: bad}
	if _, err := ingest.Submit(ctx, b.ledger, b.client, wrong, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	var corr []string
	for _, it := range bad {
		c := ingest.CorrelationID(m.BatchID, it.ObjectID, it.SHA256)
		corr = append(corr, c)
		b.settled(c, 15*time.Second)
	}
	if open, _ := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{}); len(open) != 2 {
		t.Fatalf("%d open failures, want 2", len(open))
	}
	// Without a replayer: reported, nothing recorded for them.
	res, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Replayed) != 0 || len(res.Enqueued) != 0 || len(res.Skipped) != 3 || !strings.Contains(res.Skipped[0].Reason+res.Skipped[1].Reason+res.Skipped[2].Reason, "--set") {
		t.Fatalf("resubmission without a replayer: %+v", res)
	}
	opt := b.ops().SubmitOptions()
	res, err = ingest.Submit(ctx, b.ledger, b.client, m, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Replayed) != 2 || len(res.Enqueued) != 0 {
		t.Fatalf("resubmission with the corrections: %+v", res)
	}
	for _, i := range []int{0, 2} {
		deadline := time.Now().Add(15 * time.Second)
		for {
			evs, err := b.ledger.Events(ctx, premis.Filter{CorrelationID: corr[i], Latest: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 1 && evs[0].Attempt == 2 && evs[0].Destination.Terminal() {
				if evs[0].Destination != premis.Accepted || evs[0].SHA256 != good[i].SHA256 {
					t.Fatalf("item %d after its corrected resubmission: %s sha %s (%s)", i, evs[0].Destination, evs[0].SHA256, evs[0].Message)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("item %d: the replay did not settle: %+v", i, evs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	p, err := ingest.BatchProgress(ctx, b.ledger, m.BatchID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Recorded != 3 || p.ByDestination.Of(premis.Accepted) != 3 {
		t.Fatalf("the batch after the corrections: %+v", p)
	}
}

// TestReplayWithFileAndCorrections: the obvious fix for a master that
// lacks a colour profile in its entry and needs a new file: --file and
// --set in one replay. Before, the manifest's relative path
// (masters/m.tif) was looked for beneath the corrected file's folder, and
// the replay always failed. The item keeps its name in the batch.
func TestReplayWithFileAndCorrections(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.start()
	ctx := context.Background()
	data := master(t, goodPage)
	if err := os.MkdirAll(filepath.Join(b.dir, "masters"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, sum := b.file("masters/m.tif", data)
	m := &validate.Manifest{BatchID: "both-1", Submitter: "t", Items: []validate.Item{{ObjectID: "m", Kind: "tiff", Path: "masters/m.tif", SHA256: sum, ResolutionDPI: "400"}}}
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, b.dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	corr := ingest.CorrelationID(m.BatchID, "m", sum)
	failed := b.settled(corr, 15*time.Second)
	if failed.Destination != premis.Quarantined {
		t.Fatalf("without a color profile: %s (%s)", failed.Destination, failed.Message)
	}
	// The corrected file lies beside the original, in the batch folder
	// (with no ingest root, nowhere else is allowed).
	fixed := filepath.Join(b.dir, "fixed")
	if err := os.MkdirAll(fixed, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(fixed, "m.tif")
	if err := os.WriteFile(f, master(t, goodPage, goodPage), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := b.ops().Replay(ctx, failed.ID, ingest.ReplayOptions{Operator: "ana", File: f, Set: map[string]string{"color_profile": "sRGB"}})
	if err != nil {
		t.Fatalf("--file with --set: %v", err)
	}
	if res.Replay.Path != f || res.Replay.Item.ColorProfile != "sRGB" || res.Replay.Item.Path != "masters/m.tif" {
		t.Errorf("replay envelope: path %s, item %+v", res.Replay.Path, res.Replay.Item)
	}
	ev := b.settledAfter(corr, premis.Accepted, 15*time.Second)
	if ev.Attempt != 2 || ev.Path != f || ev.Path == p {
		t.Errorf("accepted: attempt %d path %s", ev.Attempt, ev.Path)
	}
}

// TestReplayFileOutsideTheRootsIsRefused: dlq replay ID --file
// /etc/passwd was recorded (the corrected file was confined only to its
// own folder when no ingest root was configured). Now the file must lie
// beneath an ingest root or, with none, beside the original (beneath its
// batch folder); anything else is refused as io.outside-root before
// anything is read or recorded: the ledger is unchanged, the dead letter
// still open.
func TestReplayFileOutsideTheRootsIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.start()
	ctx := context.Background()
	dead := b.deadLetters(1, 1, "passwd")[0]
	fs, err := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{Destination: premis.DeadLetter})
	if err != nil || len(fs) != 1 {
		t.Fatalf("dead letters: %d (%v)", len(fs), err)
	}
	before, err := b.ledger.Events(ctx, premis.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "m.tif")
	if err := os.WriteFile(elsewhere, master(t, goodPage), 0o644); err != nil {
		t.Fatal(err)
	}
	ops := b.ops()
	for _, tc := range []struct {
		name  string
		roots []string
		file  string
	}{
		{"no roots, /etc/passwd", nil, "/etc/passwd"},
		{"no roots, a file in another folder", nil, elsewhere},
		{"no roots, climbing out of the batch folder", nil, filepath.Join(b.dir, "..", filepath.Base(filepath.Dir(elsewhere)), "m.tif")},
		{"a root, /etc/passwd", []string{b.dir}, "/etc/passwd"},
	} {
		ops.Roots = tc.roots
		for _, dry := range []bool{true, false} {
			_, err := ops.Replay(ctx, fs[0].ID, ingest.ReplayOptions{Operator: "ana", File: tc.file, DryRun: dry})
			var oe *validate.OpenError
			if !errors.As(err, &oe) || oe.Code != "io.outside-root" {
				t.Errorf("%s (dry run %v): %v, want io.outside-root", tc.name, dry, err)
			}
		}
	}
	after, err := b.ledger.Events(ctx, premis.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the ledger changed: %d events, then %d (last %s %s)", len(before), len(after), after[len(after)-1].Type, after[len(after)-1].Note)
	}
	if open, _ := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{Destination: premis.DeadLetter}); len(open) != 1 || open[0].CorrelationID != dead.CorrelationID {
		t.Errorf("the dead letter is no longer open: %+v", open)
	}
}
