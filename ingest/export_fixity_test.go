package ingest_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
)

// TestExportStatesOnlyTheFixityRead: through the worker, an accepted master
// exports the digest and size of the bytes it read as its fixity, and a
// master whose file was never there (io.not-found, retried, then
// dead-lettered) exports no fixity and no size, its manifest's digest only
// as a declared value; both documents valid PREMIS 3.0.
func TestExportStatesOnlyTheFixityRead(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	data := master(t, goodPage)
	path, sha := b.file("good.tif", data)
	good := b.envelope("good", path, sha)
	declared := strings.Repeat("a", 64)
	missing := b.envelope("missing", filepath.Join(b.dir, "never-copied.tif"), declared)
	b.start()
	b.enqueue(good)
	b.enqueue(missing)
	if ev := b.settled(good.CorrelationID, 20*time.Second); ev.Destination != premis.Accepted {
		t.Fatalf("good: %s %s", ev.Destination, ev.Code)
	}
	if ev := b.settled(missing.CorrelationID, 20*time.Second); ev.Destination != premis.DeadLetter || ev.Code != "io.not-found" {
		t.Fatalf("missing: %s %s", ev.Destination, ev.Code)
	}
	for _, opt := range []premis.ExportOptions{{}, {Archivematica: true, Organisation: "Example Archive"}} {
		var buf bytes.Buffer
		if _, err := premis.ExportLedger(context.Background(), &buf, b.ledger, premis.Filter{BatchID: "batch-t"}, premis.Software{Name: "lazaret", Version: "test"}, opt); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "premis.xml")
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		testenv.ValidatePREMIS(t, out)
		var doc struct {
			Objects []struct {
				ID          string   `xml:"objectIdentifier>objectIdentifierValue"`
				Declared    []string `xml:"significantProperties>significantPropertiesValue"`
				Digest      []string `xml:"objectCharacteristics>fixity>messageDigest"`
				Size        string   `xml:"objectCharacteristics>size"`
				Significant []string `xml:"significantProperties>significantPropertiesType"`
			} `xml:"object"`
		}
		if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, o := range doc.Objects {
			switch o.ID {
			case "good":
				seen++
				if len(o.Digest) != 1 || o.Digest[0] != sha || o.Size != strconv.Itoa(len(data)) {
					t.Errorf("Archivematica %v: the accepted master's fixity %v size %q, want %s and %d", opt.Archivematica, o.Digest, o.Size, sha, len(data))
				}
			case "missing":
				seen++
				if len(o.Digest) > 0 || o.Size != "" {
					t.Errorf("Archivematica %v: a file never read exports fixity %v size %q", opt.Archivematica, o.Digest, o.Size)
				}
				if len(o.Declared) != 1 || o.Declared[0] != declared || o.Significant[0] != "declared sha256" {
					t.Errorf("Archivematica %v: the never-read file's declared values %v %v, want its manifest's digest", opt.Archivematica, o.Significant, o.Declared)
				}
			}
		}
		if seen != 2 {
			t.Fatalf("%d of the two objects exported:\n%s", seen, buf.String())
		}
	}
}

// TestAcceptedMasterIsOneRecord: through the worker, an accepted master's
// decision is one row of the ledger, its ingestion record, and reads as
// the four events it always did: the fixity check, format
// identification and validation are the record's steps, each with an id
// of its own that a lookup finds, chained under the record's hash, and
// exported, in a PREMIS document and in METS, as events of the object.
func TestAcceptedMasterIsOneRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, fastPolicy())
	path, sha := b.file("good.tif", master(t, goodPage))
	good := b.envelope("good", path, sha)
	b.start()
	b.enqueue(good)
	if ev := b.settled(good.CorrelationID, 20*time.Second); ev.Destination != premis.Accepted {
		t.Fatalf("good: %s %s", ev.Destination, ev.Code)
	}
	var rows []premis.Event
	if err := b.ledger.Walk(ctx, func(e premis.Event, err error) error {
		if err != nil {
			return err
		}
		if e.CorrelationID == good.CorrelationID {
			rows = append(rows, e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Type != premis.Ingestion || len(rows[0].Steps) != 3 {
		t.Fatalf("the item's rows: %d, %+v", len(rows), rows)
	}
	rec := rows[0]
	evs, err := b.ledger.Events(ctx, premis.Filter{CorrelationID: good.CorrelationID})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, string(e.Type))
		if e.Seq != rec.Seq || e.Hash != rec.Hash || e.Attempt != 1 || e.TaskID != rec.TaskID {
			t.Errorf("%s: seq %d hash %s attempt %d task %s, want the record's", e.Type, e.Seq, e.Hash, e.Attempt, e.TaskID)
		}
	}
	if got := strings.Join(types, " "); got != "fix for val ing" {
		t.Fatalf("the item's events: %s", got)
	}
	for _, e := range evs[:3] {
		got, err := b.ledger.Event(ctx, e.ID)
		if err != nil || got.Type != e.Type || got.Record != rec.ID {
			t.Errorf("the %s step by its id %s: %s %s, %v", e.Type, e.ID, got.Type, got.Record, err)
		}
	}
	for _, opt := range []premis.ExportOptions{{}, {METS: true, Organisation: "Example Archive"}} {
		var buf bytes.Buffer
		n, err := premis.ExportLedger(ctx, &buf, b.ledger, premis.Filter{CorrelationID: good.CorrelationID}, premis.Software{Name: "lazaret", Version: "test"}, opt)
		if err != nil || n != 4 {
			t.Fatalf("METS %v: %d events exported, %v", opt.METS, n, err)
		}
		if !opt.METS {
			out := filepath.Join(t.TempDir(), "premis.xml")
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			testenv.ValidatePREMIS(t, out)
		}
		for _, e := range evs {
			if !bytes.Contains(buf.Bytes(), []byte(">"+e.ID+"<")) {
				t.Errorf("METS %v: event %s (%s) is not exported", opt.METS, e.ID, e.Type)
			}
		}
		if c := bytes.Count(buf.Bytes(), []byte(`record="`+rec.ID+`"`)); c != 3 {
			t.Errorf("METS %v: %d events name the record they are stored in, want its 3 steps", opt.METS, c)
		}
	}
}
