package postgres_test

import (
	"context"
	"crypto/ed25519"
	"testing"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/postgres"
)

// TestCheckpointCatchesAConsistentForgery: a ledger wiped, cut short or
// rewritten and recomputed, with its guards, head and read model put back
// to agree, verifies as intact on its own; the signed checkpoint taken
// before the attack says otherwise.
func TestCheckpointCatchesAConsistentForgery(t *testing.T) {
	t.Parallel()
	restore := postgres.GuardSQL
	dropEvents := "DROP TRIGGER lazaret_events_no_change ON lazaret_events"
	dropHead := "DROP TRIGGER lazaret_ledger_head_forward ON lazaret_ledger_head"
	cases := []ledgertest.ConsistentForgery{
		{Name: "wiped: events, head and read model",
			Attack: func(t *testing.T, dsn string) {
				attack(t, dsn, dropEvents, dropHead, "DELETE FROM lazaret_events", "DELETE FROM lazaret_latest",
					"UPDATE lazaret_ledger_head SET event_count = 0, last_hash = '"+premis.ChainGenesis+"'",
					restore("lazaret_events_no_change"), restore("lazaret_ledger_head_forward"))
			},
			Want: ledgertest.Found(premis.ProblemTruncated, 0, "0 events stored", "signed checkpoint", "counts 4")},
		{Name: "newest cut, head moved back, read model mended",
			Attack: func(t *testing.T, dsn string) {
				attack(t, dsn, dropEvents, dropHead, "DELETE FROM lazaret_events WHERE seq = (SELECT max(seq) FROM lazaret_events)",
					"DELETE FROM lazaret_latest WHERE seq NOT IN (SELECT seq FROM lazaret_events)",
					"UPDATE lazaret_ledger_head SET event_count = 3, last_hash = (SELECT hash FROM lazaret_events ORDER BY seq DESC LIMIT 1)",
					restore("lazaret_events_no_change"), restore("lazaret_ledger_head_forward"))
			},
			Want: ledgertest.Found(premis.ProblemTruncated, 0, "3 events stored", "signed checkpoint", "counts 4")},
		{Name: "rewritten and every hash after it recomputed",
			Attack: func(t *testing.T, dsn string) {
				attack(t, dsn, dropEvents, dropHead, "UPDATE lazaret_events SET message = 'all fine' WHERE seq = (SELECT min(seq) FROM lazaret_events) + 1")
				c := connect(t, dsn)
				ctx := context.Background()
				var second int64
				if err := c.QueryRow(ctx, "SELECT seq FROM lazaret_events ORDER BY seq OFFSET 1 LIMIT 1").Scan(&second); err != nil {
					t.Fatal(err)
				}
				head := ledgertest.Recompute(t, ledgertest.AuditAt(t, dsn), second, func(seq int64, prev, hash string) {
					if _, err := c.Exec(ctx, `UPDATE lazaret_events SET prev_hash = $1, hash = $2 WHERE seq = $3`, prev, hash, seq); err != nil {
						t.Fatal(err)
					}
				})
				if _, err := c.Exec(ctx, `UPDATE lazaret_ledger_head SET last_hash = $1`, head.Hash); err != nil {
					t.Fatal(err)
				}
				attack(t, dsn, restore("lazaret_events_no_change"), restore("lazaret_ledger_head_forward"))
			},
			Want: ledgertest.Found(premis.ProblemCheckpoint, 0, "signed checkpoint", "says event 4 has hash", "recomputed")},
	}
	ledgertest.ForgeCheckpointed(t, ledgertest.Forger{New: newDSN, Attack: attack}, cases)
}

// TestVerifierIsIncremental: after a checkpoint, a Verifier walks from its
// row on (PostgreSQL's seqs have gaps: the checkpoint's seq is the row's).
func TestVerifierIsIncremental(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := seeded(t)
	log, key := ledgertest.Checkpointed(t, ledgertest.AuditAt(t, dsn))
	l, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, ledgertest.Event("m5", premis.Validation, 1), ledgertest.Event("m6", premis.Validation, 1)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	v := &premis.Verifier{Auditor: ledgertest.AuditAt(t, dsn), Log: log, Public: key.Public().(ed25519.PublicKey)}
	res, err := v.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Intact() || res.From != 4 || res.Events != 6 {
		t.Fatalf("check: %s from %d, want intact, 6 events from 4\n%s", res, res.From, ledgertest.Problems(res))
	}
}
