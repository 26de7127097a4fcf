package ingest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// TestReplayCorrectsManifestFields: an item quarantined for a metadata
// mistake (no color_profile) is replayed with the field corrected and
// accepted; the replay records what was corrected; corrections the
// manifest's rules refuse, unknown fields and fields that name the item
// are refused before anything is recorded.
func TestReplayCorrectsManifestFields(t *testing.T) {
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
