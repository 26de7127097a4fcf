package ingest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/tiff"
)

// TestRecordedChunkStands: a redelivery whose chunk of an interchange is
// recorded (its last event stored, and so all of it: one transaction)
// keeps what was recorded. A parcel it planned that the chunk holds is
// filled in from the ledger, to be parked again under the same id; one it
// planned that the chunk does not hold (the message's verdict changed
// between the deliveries) is dropped, not parked beside the message's
// recorded acceptance.
func TestRecordedChunkStands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w := &Worker{Ledger: l, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	event := func(corr string, t premis.EventType) *premis.Event {
		return &premis.Event{Key: premis.EventKey(corr, "sha", t, 1), Type: t, Outcome: premis.Success, ObjectID: corr, CorrelationID: corr, Attempt: 1}
	}
	parked := event("inv#2", premis.Quarantine)
	parked.Outcome, parked.Destination = premis.Failure, premis.Quarantined
	chunk := event("inv", premis.Ingestion)
	chunk.Members = []premis.Member{{ObjectID: "inv#1", Number: 1}, {ObjectID: "inv#3", Number: 3}}
	if _, err := l.Append(ctx, parked, chunk); err != nil {
		t.Fatal(err)
	}
	r := &result{perMessage: true, d: &delivery{retried: 1}}
	again := event("inv#2", premis.Quarantine)
	changed := event("inv#3", premis.Quarantine) // accepted when recorded
	last := event("inv", premis.Ingestion)
	skip, kept, err := w.chunkRecorded(ctx, r, []*premis.Event{again, changed, last}, []parcel{{&Envelope{}, again}, {&Envelope{}, changed}})
	if err != nil || !skip {
		t.Fatalf("recorded chunk: skip %v, %v", skip, err)
	}
	if len(kept) != 1 || kept[0].ev != again || again.ID != parked.ID {
		t.Fatalf("kept %d parcels (first event %s), want the recorded one, %s", len(kept), again.ID, parked.ID)
	}
	// Nothing recorded yet: every parcel stays, and the chunk is appended.
	r.d.retried = 0
	if skip, kept, err := w.chunkRecorded(ctx, r, []*premis.Event{changed}, []parcel{{&Envelope{}, changed}}); err != nil || skip || len(kept) != 1 {
		t.Errorf("first delivery: skip %v, %d parcels, %v", skip, len(kept), err)
	}
}

// TestWarningTextIsBounded: a master's warnings go into its record's note
// up to maxWarningText bytes, then as a count of the rest, so that a
// hostile master's thousands of warnings cannot make a record the ledger
// refuses to read back; a lone warning past the bound is cut at a
// character, never inside one.
func TestWarningTextIsBounded(t *testing.T) {
	ws := make([]tiff.Warning, 5000)
	for i := range ws {
		ws[i] = tiff.Warning{Code: "W006", Message: fmt.Sprintf("private tag %d tolerated", 60000+i)}
	}
	text := warningText(ws)
	if len(text) > maxWarningText+64 {
		t.Errorf("5,000 warnings took %d bytes, want about %d", len(text), maxWarningText)
	}
	shown := strings.Count(text, "W006: ")
	if want := fmt.Sprintf("; and %d more warnings", len(ws)-shown); !strings.HasSuffix(text, want) || shown == 0 {
		t.Errorf("%d warnings shown, text ends %q, want it to end %q", shown, text[max(0, len(text)-40):], want)
	}
	if got := warningText(ws[:2]); got != "W006: private tag 60000 tolerated; W006: private tag 60001 tolerated" {
		t.Errorf("two warnings: %q", got)
	}
	long := []tiff.Warning{{Code: "W001", Message: strings.Repeat("é", maxWarningText)}, {Code: "W002", Message: "x"}}
	text = warningText(long)
	if !utf8.ValidString(text) || len(text) > maxWarningText || !strings.HasSuffix(text, "…; and 1 more warnings") {
		t.Errorf("a lone long warning: %d bytes, valid UTF-8 %v, ends %q", len(text), utf8.ValidString(text), text[len(text)-30:])
	}
}
