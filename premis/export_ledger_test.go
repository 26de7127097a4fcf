package premis_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// exportLedger is an SQLite ledger of n items of four events each, the
// items alternately in batches b0 and b1, one in three an interchange
// message (so an Archivematica export rewrites it), with the batches' own
// events first; after each item, the event of a chunk of interchange
// inv-big whose members are inv-big#1 and one message more.
func exportLedger(t *testing.T, items int) *sqlite.Ledger {
	t.Helper()
	ctx := context.Background()
	l, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var evs []*premis.Event
	for _, b := range []string{"b0", "b1"} {
		evs = append(evs, &premis.Event{Key: premis.EventKey(b, "", premis.IngestionStart, 0), Type: premis.IngestionStart, DateTime: at, Outcome: premis.Success,
			ObjectID: b, BatchID: b, CorrelationID: b, Kind: "batch"})
	}
	for i := range items {
		b, obj, kind := fmt.Sprintf("b%d", i%2), fmt.Sprintf("master-%05d", i), "tiff"
		if i%3 == 0 {
			obj, kind = fmt.Sprintf("inv-%05d#1", i), "edifact"
		}
		corr := premis.EventKey(b, obj, "corr", 0)
		for j, typ := range []premis.EventType{premis.FixityCheck, premis.FormatIdentification, premis.Validation, premis.Ingestion} {
			e := &premis.Event{Key: premis.EventKey(corr, "", typ, 1), Type: typ, DateTime: at.Add(time.Duration(i*4+j) * time.Millisecond),
				Outcome: premis.Success, ObjectID: obj, BatchID: b, CorrelationID: corr, Kind: kind, SHA256: strings.Repeat("ab", 32),
				Size: int64(1000 + i), PUID: "fmt/353", Path: "/in/" + obj, Attempt: 1, Agent: "lazaret/test"}
			if typ == premis.Ingestion {
				e.Destination = premis.Accepted
			}
			evs = append(evs, e)
		}
		evs = append(evs, &premis.Event{Key: premis.EventKey("inv-big", "", premis.Ingestion, i+1), Type: premis.Ingestion,
			DateTime: at.Add(time.Duration(i*4+3) * time.Millisecond), Outcome: premis.Success, ObjectID: "inv-big", BatchID: b,
			CorrelationID: "inv-big", Kind: "edifact", Attempt: 1, Agent: "lazaret/test",
			Members: []premis.Member{{ObjectID: "inv-big#1", Number: 1, Offset: 80, Type: "IFTMIN"}, {ObjectID: fmt.Sprintf("inv-big#%d", i+2), Number: i + 2, Offset: int64(200 + i), Type: "IFTMIN"}}})
	}
	for len(evs) > 0 {
		n := min(len(evs), 500)
		if _, err := l.Append(ctx, evs[:n]...); err != nil {
			t.Fatal(err)
		}
		evs = evs[n:]
	}
	return l
}

// TestExportLedgerMatchesWriteXML: the export read a page at a time is the
// document written from all the events at once, whatever the filter and
// the shape, over pages whose seqs have gaps (a batch's events interleave
// with another's).
func TestExportLedgerMatchesWriteXML(t *testing.T) {
	ctx := context.Background()
	l := exportLedger(t, 1100) // 5,502 events: six pages, the member's two
	for _, c := range []struct {
		name string
		f    premis.Filter
		opt  premis.ExportOptions
	}{
		{"whole ledger", premis.Filter{}, premis.ExportOptions{}},
		{"one batch", premis.Filter{BatchID: "b1"}, premis.ExportOptions{Organisation: "Archive"}},
		{"one batch for Archivematica", premis.Filter{BatchID: "b0"}, premis.ExportOptions{Archivematica: true}},
		{"one batch as METS", premis.Filter{BatchID: "b0"}, premis.ExportOptions{METS: true, Organisation: "Archive", Created: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}},
		{"after a seq", premis.Filter{AfterSeq: 1234}, premis.ExportOptions{}},
		{"a message, through its chunks' members", premis.Filter{ObjectID: "inv-big#1"}, premis.ExportOptions{}},
		{"a time window", premis.Filter{Since: time.Date(2026, 12, 1, 9, 0, 1, 0, time.UTC), Until: time.Date(2026, 12, 1, 9, 0, 4, 0, time.UTC)}, premis.ExportOptions{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			evs, err := l.Events(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			var want, got bytes.Buffer
			if err := premis.WriteXMLOptions(&want, evs, sw, c.opt); err != nil {
				t.Fatal(err)
			}
			n, err := premis.ExportLedger(ctx, &got, l, c.f, sw, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := got.Bytes(), want.Bytes(); !bytes.Equal(g, w) {
				at := 0
				for at < min(len(g), len(w)) && g[at] == w[at] {
					at++
				}
				t.Errorf("paged export (%d bytes) differs from the whole one (%d bytes) at byte %d:\ngot  %q\nwant %q",
					len(g), len(w), at, g[at:min(len(g), at+80)], w[at:min(len(w), at+80)])
			}
			wantN := 0
			for _, e := range evs {
				if !(c.opt.Archivematica || c.opt.METS) || e.Kind != "batch" {
					wantN++
				}
			}
			if n != wantN || wantN < 1000 {
				t.Errorf("wrote %d events, want %d (and more than a page)", n, wantN)
			}
		})
	}
	var buf bytes.Buffer
	if _, err := premis.ExportLedger(ctx, &buf, l, premis.Filter{BatchID: "no-such-batch"}, sw, premis.ExportOptions{}); !errors.Is(err, premis.ErrNothingToExport) || buf.Len() > 0 {
		t.Errorf("an export of nothing: %v, %d bytes written", err, buf.Len())
	}
	if _, err := premis.ExportLedger(ctx, &buf, l, premis.Filter{Kind: "batch"}, sw, premis.ExportOptions{Archivematica: true}); !errors.Is(err, premis.ErrNothingToExport) || buf.Len() > 0 {
		t.Errorf("an Archivematica export of batch events only: %v, %d bytes written", err, buf.Len())
	}
}

// growingLedger appends more events of the same batch when the export's
// second read begins.
type growingLedger struct {
	*sqlite.Ledger
	t     *testing.T
	reads int
}

func (g *growingLedger) Events(ctx context.Context, f premis.Filter) ([]premis.Event, error) {
	if f.AfterSeq == 0 {
		if g.reads++; g.reads == 2 {
			for i := range 3 {
				corr := fmt.Sprintf("late-%d", i)
				if _, err := g.Ledger.Append(ctx, &premis.Event{Key: premis.EventKey(corr, "", premis.FixityCheck, 1), Type: premis.FixityCheck,
					Outcome: premis.Success, ObjectID: corr, BatchID: "b1", CorrelationID: corr, Kind: "tiff"}); err != nil {
					g.t.Fatal(err)
				}
			}
		}
	}
	return g.Ledger.Events(ctx, f)
}

// TestExportLedgerIsOfOneMoment: events stored while an export runs are
// in neither read, and the head it records is the one its events end at.
func TestExportLedgerIsOfOneMoment(t *testing.T) {
	ctx := context.Background()
	l := exportLedger(t, 300)
	head, _, err := l.RecordedHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := l.Events(ctx, premis.Filter{BatchID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := premis.WriteXMLOptions(&want, evs, sw, premis.ExportOptions{Head: &head}); err != nil {
		t.Fatal(err)
	}
	g := &growingLedger{Ledger: l, t: t}
	n, err := premis.ExportLedger(ctx, &got, g, premis.Filter{BatchID: "b1"}, sw, premis.ExportOptions{LedgerHead: true})
	if err != nil {
		t.Fatal(err)
	}
	if g.reads != 2 {
		t.Fatalf("the ledger was read from the start %d times, want 2", g.reads)
	}
	if n != len(evs) || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("export while the ledger grows: %d events (want %d), same document: %v", n, len(evs), bytes.Equal(got.Bytes(), want.Bytes()))
	}
}

// peakHeap notes the most memory in use when asked to.
type peakHeap struct{ peak uint64 }

func (p *peakHeap) sample() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.peak = max(p.peak, ms.HeapAlloc)
}

// bulkyLedger hands over events of 32 KiB envelopes, made as they are
// asked for, a page at a time (or all at once), as a ledger does.
type bulkyLedger struct {
	premis.Ledger
	events int
	heap   *peakHeap
}

func (b *bulkyLedger) Events(_ context.Context, f premis.Filter) ([]premis.Event, error) {
	b.heap.sample()
	var evs []premis.Event
	for seq := f.AfterSeq + 1; seq <= int64(b.events) && (f.Limit == 0 || len(evs) < f.Limit); seq++ {
		evs = append(evs, b.event(seq))
	}
	return evs, nil
}

// Event reads one event by id, as a METS export does (the writer samples
// the heap as they are written).
func (b *bulkyLedger) Event(_ context.Context, id string) (premis.Event, error) {
	var seq int64
	if _, err := fmt.Sscanf(id, "ev-%06d", &seq); err != nil || seq < 1 || seq > int64(b.events) {
		return premis.Event{}, premis.ErrNotFound
	}
	return b.event(seq), nil
}

func (b *bulkyLedger) event(seq int64) premis.Event {
	return premis.Event{Seq: seq, ID: fmt.Sprintf("ev-%06d", seq), Type: premis.Validation, Outcome: premis.Success,
		ObjectID: fmt.Sprintf("master-%06d", seq/4), BatchID: "b", Kind: "tiff", Envelope: []byte(`{"pad":"` + strings.Repeat("x", 32<<10) + `"}`)}
}

// sampling is a writer that samples the heap every 64 writes.
type sampling struct {
	heap *peakHeap
	n    int
}

func (s *sampling) Write(p []byte) (int, error) {
	if s.n++; s.n%64 == 0 {
		s.heap.sample()
	}
	return len(p), nil
}

// TestExportLedgerMemory: an export of 12,000 events of 32 KiB each (375
// MiB) holds a page of them at a time, not all; a METS export, which reads
// each object's events by id, holds one.
func TestExportLedgerMemory(t *testing.T) {
	for _, opt := range []premis.ExportOptions{{}, {METS: true, Organisation: "Archive"}} {
		heap, start := &peakHeap{}, time.Now()
		b := &bulkyLedger{events: 12000, heap: heap}
		n, err := premis.ExportLedger(context.Background(), &sampling{heap: heap}, b, premis.Filter{BatchID: "b"}, sw, opt)
		if err != nil || n != b.events {
			t.Fatalf("export (METS %v): %d events, %v", opt.METS, n, err)
		}
		const limit = 96 << 20
		if heap.peak > limit {
			t.Errorf("the export (METS %v) held %d MiB at once, want under %d", opt.METS, heap.peak>>20, limit>>20)
		}
		t.Logf("METS %v: peak heap %d MiB, %v", opt.METS, heap.peak>>20, time.Since(start).Round(time.Millisecond))
	}
}

// TestEachEventPages: EachEvent hands over what one Events call returns,
// in order, a page at a time, with f.Limit the count in all.
func TestEachEventPages(t *testing.T) {
	ctx := context.Background()
	l := exportLedger(t, 1100) // 5,502 events, inv-big#1 in 1,100 of them
	for _, f := range []premis.Filter{
		{},
		{Limit: 1000},
		{Limit: 2500},
		{BatchID: "b1", Limit: 1001},
		{ObjectID: "inv-big#1", AfterSeq: 100},
		{ObjectID: "inv-big#1", Limit: 1050},
	} {
		want, err := l.Events(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var got []premis.Event
		if err := premis.EachEvent(ctx, l, f, func(e premis.Event) error {
			got = append(got, e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%+v: %d events, want %d", f, len(got), len(want))
			continue
		}
		for i := range want {
			if got[i].ID != want[i].ID || got[i].Seq != want[i].Seq {
				t.Errorf("%+v: event %d is seq %d, want %d", f, i, got[i].Seq, want[i].Seq)
				break
			}
		}
	}
	stop := errors.New("enough")
	n := 0
	if err := premis.EachEvent(ctx, l, premis.Filter{}, func(premis.Event) error {
		if n++; n == 1500 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || n != 1500 {
		t.Errorf("an error from fn: %v after %d events", err, n)
	}
	cancelled, cancel := context.WithCancelCause(ctx)
	cancel(stop)
	if err := premis.EachEvent(cancelled, l, premis.Filter{}, func(premis.Event) error { return nil }); !errors.Is(err, stop) {
		t.Errorf("a cancelled listing: %v, want its cause", err)
	}
}

// sliceLedger answers Events from a slice, ignoring every filter; with
// overshoot it ignores Limit too.
type sliceLedger struct {
	premis.Ledger
	evs       []premis.Event
	overshoot bool
}

func (s *sliceLedger) Events(_ context.Context, f premis.Filter) ([]premis.Event, error) {
	var out []premis.Event
	for _, e := range s.evs {
		if e.Seq > f.AfterSeq && (s.overshoot || f.Limit == 0 || len(out) < f.Limit) {
			out = append(out, e)
		}
	}
	return out, nil
}

// TestEachEventGuards: a ledger whose page goes back (a seq not after the
// last) is an error, not a loop or a duplicate; one that returns more than
// the page asked for still gives no more than f.Limit in all.
func TestEachEventGuards(t *testing.T) {
	ctx := context.Background()
	var evs []premis.Event
	for seq := range int64(2500) {
		evs = append(evs, premis.Event{Seq: seq + 1, ID: fmt.Sprintf("ev-%d", seq+1)})
	}
	back := &sliceLedger{evs: append(append([]premis.Event(nil), evs[:1200]...), evs[1100:]...)} // seq 1101..1200 twice
	n := 0
	err := premis.EachEvent(ctx, back, premis.Filter{}, func(premis.Event) error { n++; return nil })
	if err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Errorf("a page that goes back: %v after %d events", err, n)
	}
	for _, limit := range []int{1, 999, 1000, 1500} {
		n = 0
		if err := premis.EachEvent(ctx, &sliceLedger{evs: evs, overshoot: true}, premis.Filter{Limit: limit}, func(premis.Event) error {
			n++
			return nil
		}); err != nil || n != limit {
			t.Errorf("Limit %d from a ledger that overshoots: %d events, %v", limit, n, err)
		}
	}
}
