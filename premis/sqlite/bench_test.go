package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// The ledger benchmarks every backend runs (see ledgertest.Benches): the
// cost of the chain and of group commit in appends/s, and of checking a
// ledger. Compare within one run.
//
//	go test -run '^$' -bench 'Ledger/Append' -benchtime 2000x ./premis/sqlite/
//	go test -run '^$' -bench 'Ledger/Verif' ./premis/sqlite/
func BenchmarkLedger(b *testing.B) {
	ledgertest.Benches{Ledger: chainedLedger, V0: v0Appender}.Run(b)
}

func chainedLedger(b *testing.B) premis.Ledger {
	l, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// v0Appender appends as the version before the chain did, with the same
// connection settings: Prepare, then INSERT ... ON CONFLICT DO NOTHING in a
// BEGIN IMMEDIATE transaction of its own.
func v0Appender(b *testing.B) ledgertest.AppendFunc {
	path := filepath.Join(b.TempDir(), "ledger.db")
	writeV0(b, path, 0)
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(FULL)", "foreign_keys(ON)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	insert := "INSERT INTO events (" + ledgersql.ColumnsBeforeMembers + ") VALUES (?" + strings.Repeat(",?", ledgersql.NumColumnsBeforeMembers-1) + ") ON CONFLICT (key) DO NOTHING"
	return func(ctx context.Context, e *premis.Event) error {
		if err := premis.Prepare(e); err != nil {
			return err
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, insert, e.ID, e.Key, e.Type, e.DateTime.Format(time.RFC3339Nano), e.Detail, e.Outcome,
			e.Note, e.Class, e.Code, e.Message, e.Offset, e.Page, e.Segment, e.Element, e.Component, e.Tag, e.Destination,
			e.ObjectID, e.BatchID, e.CorrelationID, e.Kind, e.SHA256, e.Size, e.PUID, e.Path, e.Attempt, e.Retries,
			e.TaskID, e.ReplayOf, e.Agent, e.Operator, e.Envelope); err != nil {
			return err
		}
		return tx.Commit()
	}
}

// Listing open failures from a ledger of 200,000 events (40,000 items, one
// in ten failed): in SQL with Filter.Latest, against reading every event as
// the listing did before (the anchor). Compare ns/op and B/op in one run:
//
//	go test -run '^$' -bench Failures -benchtime 5x ./premis/sqlite/
func BenchmarkFailuresLatestSQL(b *testing.B) { benchFailures(b, true) }
func BenchmarkFailuresReadAll(b *testing.B)   { benchFailures(b, false) }

var failuresLedger = struct {
	sync.Once
	l premis.Ledger
}{}

func benchFailures(b *testing.B, latest bool) {
	failuresLedger.Do(func() {
		dir, err := os.MkdirTemp("", "lazaret-bench-")
		if err != nil {
			b.Fatal(err)
		}
		l, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
		if err != nil {
			b.Fatal(err)
		}
		var batch []*premis.Event
		for i := 0; i < 40000; i++ {
			obj := fmt.Sprint("item-", i)
			for j, t := range []premis.EventType{premis.IngestionStart, premis.FixityCheck, premis.FormatIdentification, premis.Validation, premis.Ingestion} {
				e := ledgertest.Event(obj, t, 1)
				e.Destination, e.Class, e.Code, e.Outcome = "", "", "", premis.Success
				switch {
				case j == 0:
					e.Destination = premis.Submitted
				case j == 4 && i%10 == 0:
					e.Type, e.Destination, e.Outcome, e.Class, e.Code = premis.Quarantine, premis.Quarantined, premis.Failure, premis.Semantic, "x"
				case j == 4:
					e.Destination = premis.Accepted
				}
				batch = append(batch, e)
			}
			if len(batch) >= 1000 {
				if _, err := l.Append(context.Background(), batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		failuresLedger.l = l
	})
	l := failuresLedger.l
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if latest {
			evs, err := l.Events(context.Background(), premis.Filter{Latest: true, Limit: 50,
				Destinations: []premis.Destination{premis.DeadLetter, premis.Quarantined, premis.AuditHold}})
			if err != nil || len(evs) != 50 {
				b.Fatal(len(evs), err)
			}
			continue
		}
		evs, err := l.Events(context.Background(), premis.Filter{})
		if err != nil || len(evs) != 200000 {
			b.Fatal(len(evs), err)
		}
	}
}

// What a worker's commit costs: an accepted master's four events a
// transaction, through the group committer, from two and eight handlers;
// and the bytes the ledger file grows by per item.
//
//	go test -run '^$' -bench AcceptedItems -benchtime 3000x ./premis/sqlite/
func BenchmarkAcceptedItemsWriters2(b *testing.B) { benchAcceptedItems(b, 2) }
func BenchmarkAcceptedItemsWriters8(b *testing.B) { benchAcceptedItems(b, 8) }

func benchAcceptedItems(b *testing.B, writers int) {
	path := filepath.Join(b.TempDir(), "ledger.db")
	l, err := sqlite.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	g := premis.NewGroupCommit(l, 0)
	ledgertest.BenchAcceptedItems(b, writers, g)
	g.Stop()
	if err := l.Close(); err != nil { // checkpoints the WAL into the file
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Size())/float64(b.N), "file-bytes/item")
}

// BenchmarkCommitFloor is what SQLite itself asks of one durable commit in
// this build (WAL, synchronous=FULL, one writer), below any ledger: a
// transaction of one small row; one shaped like a group of two accepted
// masters (eight rows of 1 KB, four indexes on hashed keys); and the same
// group were a master one row. The group of eight masters (a full group at
// concurrency 8) is 32 rows, or eight were a master one row: the second
// case again.
// Against BenchmarkAcceptedItemsWriters2 it says how much of an item's
// commit is the record and how much the database.
//
//	go test -run '^$' -bench CommitFloor -benchtime 3000x ./premis/sqlite/
func BenchmarkCommitFloor(b *testing.B) {
	const fourIndexes = `CREATE UNIQUE INDEX ia ON t(a); CREATE INDEX ib ON t(b, a); CREATE INDEX ic ON t(c); CREATE INDEX id ON t(d);`
	for _, c := range []struct {
		name    string
		indexes string
		rows    int
		pad     int
	}{
		{"one-small-row", "", 1, 5},
		{"eight-1KB-rows-four-indexes", fourIndexes, 8, 1000},
		{"two-1KB-rows-four-indexes", fourIndexes, 2, 1000},
		{"thirty-two-1KB-rows-four-indexes", fourIndexes, 32, 1000},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := url.Values{}
			for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)"} {
				q.Add("_pragma", p)
			}
			q.Set("_txlock", "immediate")
			db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "floor.db")+"?"+q.Encode())
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			if _, err := db.Exec(`CREATE TABLE t (seq INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT, d TEXT, x TEXT);` + c.indexes); err != nil {
				b.Fatal(err)
			}
			pad := strings.Repeat("x", c.pad)
			b.ResetTimer()
			for i := range b.N {
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				for r := range c.rows {
					key := premis.EventKey(fmt.Sprint(i), "sha", premis.Validation, r)
					if _, err := tx.Exec(`INSERT INTO t (a, b, c, d, x) VALUES (?, ?, ?, ?, ?)`, key, premis.EventKey(fmt.Sprint(i), "", "", 0),
						fmt.Sprint("obj-", i), "batch", pad); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}
