package ingest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// TestBatchProgress: a batch knows how many items it was submitted with
// before any worker runs; progress counts them pending, then done, with a
// rate; a mistyped batch id is an error, not an empty batch; submitting the
// same manifest again records no second batch fact.
func TestBatchProgress(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	ctx := context.Background()
	if _, err := ingest.BatchProgress(ctx, b.ledger, "no-such-batch"); !errors.Is(err, ingest.ErrUnknownBatch) {
		t.Fatalf("unknown batch: %v", err)
	}
	m, dir := b.manifest(12)
	m.Items[3].ColorProfile = "" // one quarantined
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	p, err := ingest.BatchProgress(ctx, b.ledger, m.BatchID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Expected != 12 || p.Total() != 12 || p.Pending != 12 || p.Done != 0 || p.Finished() {
		t.Fatalf("before the workers: %+v", p)
	}
	b.start()
	for _, it := range m.Items {
		b.settled(ingest.CorrelationID(m.BatchID, it.ObjectID, it.SHA256), 15*time.Second)
	}
	p, err = ingest.BatchProgress(ctx, b.ledger, m.BatchID)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Finished() || p.Done != 12 || p.Failed != 1 || p.Pending != 0 || p.ByDestination.Of(premis.Accepted) != 11 ||
		p.ByDestination.Of(premis.Quarantined) != 1 || p.ItemsPerSecond <= 0 || p.ETA != 0 {
		t.Fatalf("after the workers: %+v", p)
	}
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	facts, err := b.ledger.Events(ctx, premis.Filter{BatchID: m.BatchID, Kind: ingest.KindBatch})
	if err != nil || len(facts) != 1 {
		t.Fatalf("%d batch facts after a resubmission of the same manifest, want 1: %v", len(facts), err)
	}
}
