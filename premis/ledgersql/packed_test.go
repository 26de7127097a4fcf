package ledgersql

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
)

// FuzzPacked: every text packs to one stored value that unpacks to it; a
// prev_hash reads back against the hash before it, and stored bytes that
// do not begin that hash read as a broken link;
// any stored bytes unpack to a text that packs back to them, or are
// refused; canonical text stored as text is refused. A detail, whatever
// its row, reads back from what EncodeDetail stores, and any stored bytes
// read as a detail no longer than maxDetail or an error.
func FuzzPacked(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	sub := submissionRow()
	seeds.Add("4fcc9464-8b3d-5f1b-af43-eaa2d22f9a73", []byte{detailFlate1, 0x03, 0x00}, sub.Detail, sub.BatchID, sub.TaskID)
	seeds.Add(premis.ChainGenesis, []byte(nil), "accepted into the repository by lazaret", "", "")
	seeds.Add("4FCC9464-8B3D-5F1B-AF43-EAA2D22F9A73", make([]byte, 16), "", "b", "t")
	seeds.Add("ing-83c143c8aed1e94bffeb5af943e879fb", make([]byte, 32), strings.Repeat("x", 300), "x", "x")
	f.Fuzz(func(t *testing.T, s string, stored []byte, detail, batch, task string) {
		v := Pack(s)
		back, err := Unpack(v)
		if err != nil || back != s {
			t.Fatalf("Pack(%q) = %v unpacks to %q, %v", s, v, back, err)
		}
		if _, packs := v.([]byte); packs {
			if _, err := Unpack(s); err == nil {
				t.Fatalf("canonical %q stored as text read back", s)
			}
		}
		if text, err := Unpack(stored); err == nil {
			if again, ok := Pack(text).([]byte); !ok || !bytes.Equal(again, stored) {
				t.Fatalf("bytes %x unpack to %q, which packs to %v", stored, text, Pack(text))
			}
		}
		h := premis.ChainHash(s, &premis.Event{Key: s})
		if prev, err := UnpackPrev(PackPrev(h), Pack(h)); err != nil || prev != h {
			t.Fatalf("prev_hash %s reads back as %q, %v", h, prev, err)
		}
		if prev, err := UnpackPrev(stored, Pack(h)); err == nil && prev != h && len(stored) > 0 && !strings.HasSuffix(prev, "…") {
			t.Fatalf("stored prev %x reads as %q, neither the hash before nor a broken link", stored, prev)
		}
		e := &premis.Event{Detail: premis.Printable(detail), BatchID: batch, TaskID: task, Agent: "lazaret/test", ObjectID: "obj"}
		enc, err := EncodeDetail(e)
		if err != nil {
			t.Fatal(err)
		}
		switch enc := enc.(type) {
		case string:
			if enc != e.Detail {
				t.Fatalf("detail %q stored as text %q", e.Detail, enc)
			}
		case []byte:
			if len(enc) >= len(e.Detail) {
				t.Fatalf("detail of %d bytes compressed to %d", len(e.Detail), len(enc))
			}
			if got, err := DecodeDetail(enc, e); err != nil || got != e.Detail {
				t.Fatalf("detail %q reads back as %q, %v", e.Detail, got, err)
			}
		}
		if got, err := DecodeDetail(stored, e); err == nil && len(got) > maxDetail {
			t.Fatalf("stored bytes read as a detail of %d bytes", len(got))
		}
	})
}

// submissionRow is a submission's row as the submitter writes it.
func submissionRow() *premis.Event {
	e := &premis.Event{BatchID: "bench-f2c68c2c1df2", TaskID: "ing-83c143c8aed1e94bffeb5af943e879fb", ObjectID: "obj-000000", Agent: "lazaret/0.9.0"}
	e.Detail = "submitted in batch " + e.BatchID + "; expected in the ingest queue as task " + e.TaskID
	return e
}

// TestPackedDetails: the details the worker writes most take a few bytes
// each, against their row; read against a row whose values changed (a
// column rewritten past the ledger) they read otherwise, which the chain
// shows.
func TestPackedDetails(t *testing.T) {
	sub := submissionRow()
	acc := &premis.Event{Detail: "accepted into the repository by lazaret", Agent: "lazaret/0.9.0", ObjectID: "obj-000000"}
	for _, c := range []struct {
		e    *premis.Event
		most int
	}{{sub, 16}, {acc, 8}} {
		enc, err := EncodeDetail(c.e)
		if err != nil {
			t.Fatal(err)
		}
		b, ok := enc.([]byte)
		if !ok || len(b) > c.most {
			t.Fatalf("%q stored as %v, want at most %d bytes", c.e.Detail, enc, c.most)
		}
		t.Logf("%d bytes of detail stored in %d", len(c.e.Detail), len(b))
	}
	enc, _ := EncodeDetail(sub)
	other := *sub
	other.TaskID = "ing-00000000000000000000000000000000"
	if got, err := DecodeDetail(enc.([]byte), &other); err == nil && got == sub.Detail {
		t.Fatalf("read against another task, the detail still reads %q", got)
	}
	if _, err := DecodeDetail([]byte{9, 1, 2}, sub); err == nil || !strings.Contains(err.Error(), "format") {
		t.Fatalf("an unknown format byte: %v", err)
	}
}

// TestPackTime: a time stores as nanoseconds where they fit; outside, it
// is refused for an event and clamped for a filter bound.
func TestPackTime(t *testing.T) {
	now := time.Date(2026, 12, 7, 2, 25, 49, 579722123, time.UTC)
	if v := PackTime(now); v != now.UnixNano() {
		t.Fatalf("PackTime = %v", v)
	}
	for _, ts := range []time.Time{time.Date(1677, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if err := CheckPackedTime(ts); err == nil {
			t.Errorf("%s accepted", ts)
		}
		if v := PackTime(ts).(int64); (v > 0) != ts.After(now) {
			t.Errorf("%s bound clamped to %d", ts, v)
		}
	}
	if err := CheckPackedTime(now); err != nil {
		t.Fatal(err)
	}
}
