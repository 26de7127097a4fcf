package sqlite_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// TestCheckpointCatchesAConsistentForgery: a ledger wiped, cut short or
// rewritten and recomputed, with its guards, head and read model put back
// to agree, verifies as intact on its own; the signed checkpoint taken
// before the attack says otherwise.
func TestCheckpointCatchesAConsistentForgery(t *testing.T) {
	t.Parallel()
	drop := func(names ...string) []string {
		var s []string
		for _, n := range names {
			s = append(s, "DROP TRIGGER "+n)
		}
		return s
	}
	restore := func(names ...string) []string {
		var s []string
		for _, n := range names {
			s = append(s, sqlite.GuardSQL(n))
		}
		return s
	}
	cases := []ledgertest.ConsistentForgery{
		{Name: "wiped: events, head and read model",
			Attack: func(t *testing.T, path string) {
				g := []string{"events_no_delete", "ledger_head_forward"}
				attack(t, path, append(append(drop(g...), "DELETE FROM events", "DELETE FROM latest",
					"UPDATE ledger_head SET event_count = 0, last_hash = X'"+premis.ChainGenesis+"'"), restore(g...)...)...)
			},
			Want: ledgertest.Found(premis.ProblemTruncated, 0, "0 events stored", "signed checkpoint", "counts 4")},
		{Name: "newest cut, head moved back, read model mended",
			Attack: func(t *testing.T, path string) {
				g := []string{"events_no_delete", "ledger_head_forward"}
				attack(t, path, append(append(drop(g...), "DELETE FROM events WHERE seq = 4", "DELETE FROM latest WHERE seq = 4",
					"UPDATE ledger_head SET event_count = 3, last_hash = (SELECT hash FROM events WHERE seq = 3)"), restore(g...)...)...)
			},
			Want: ledgertest.Found(premis.ProblemTruncated, 0, "3 events stored", "signed checkpoint", "counts 4")},
		{Name: "rewritten and every hash after it recomputed",
			Attack: func(t *testing.T, path string) {
				g := []string{"events_no_update", "ledger_head_forward"}
				attack(t, path, append(drop(g...), "UPDATE events SET message = 'all fine' WHERE seq = 2")...)
				db, err := sql.Open("sqlite", "file:"+path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				head := ledgertest.Recompute(t, ledgertest.AuditAt(t, path), 2, func(seq int64, prev, hash string) {
					if _, err := db.Exec(`UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?`, ledgersql.PackPrev(prev), ledgersql.Pack(hash), seq); err != nil {
						t.Fatal(err)
					}
				})
				if _, err := db.Exec(`UPDATE ledger_head SET last_hash = ?`, ledgersql.Pack(head.Hash)); err != nil {
					t.Fatal(err)
				}
				attack(t, path, restore(g...)...)
			},
			Want: ledgertest.Found(premis.ProblemCheckpoint, 0, "signed checkpoint", "says event 4 has hash", "recomputed")},
	}
	ledgertest.ForgeCheckpointed(t, ledgertest.Forger{New: newPath, Attack: attack}, cases)
}

// TestCheckpointLogForgeries: a line of the log that is not signed by the
// key, or is cut short, is reported by its line and not trusted.
func TestCheckpointLogForgeries(t *testing.T) {
	t.Parallel()
	path, evs := seeded(t)
	l := ledgertest.AuditAt(t, path)
	log, key := ledgertest.Checkpointed(t, l)
	other, err := premis.GenerateCheckpointKey()
	if err != nil {
		t.Fatal(err)
	}
	// A checkpoint claiming more events, signed with another key.
	forged := &premis.Checkpoint{Ledger: evs[0].Hash, Status: premis.CheckpointHead, Count: 9, Seq: 9, Hash: evs[3].Hash, Time: evs[3].DateTime}
	forged.Sign(other)
	if err := log.Append(forged); err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	v := ledgertest.VerifyCheckpointed(t, l, log, pub)
	ledgertest.WantProblem(t, v, premis.ProblemCheckpoint, 0, "line 2", "signature does not verify")
	if len(v.Problems) != 1 || v.Checkpoint == nil || v.Checkpoint.Count != 4 {
		t.Errorf("the forged entry was trusted: checked against %+v\n%s", v.Checkpoint, ledgertest.Problems(v))
	}

	f, err := os.OpenFile(log.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"ledger":"` + evs[0].Hash + `","status":"he`)
	f.Close()
	v = ledgertest.VerifyCheckpointed(t, l, log, pub)
	ledgertest.WantProblem(t, v, premis.ProblemCheckpoint, 0, "line 3", "cut short")
}

// TestVerifierIsIncremental: after a checkpoint, a Verifier walks from its
// row on; what is appended after is checked, and a rewrite of the
// checkpointed row is seen.
func TestVerifierIsIncremental(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path, _ := seeded(t)
	log, key := ledgertest.Checkpointed(t, ledgertest.AuditAt(t, path))
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, ledgertest.Event("m5", premis.Validation, 1), ledgertest.Event("m6", premis.Validation, 1)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	v := &premis.Verifier{Auditor: ledgertest.AuditAt(t, path), Log: log, Public: key.Public().(ed25519.PublicKey)}
	res, err := v.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Intact() || res.From != 4 || res.Events != 6 {
		t.Fatalf("check: %s from %d, want intact, 6 events from 4\n%s", res, res.From, ledgertest.Problems(res))
	}

	attack(t, path, "DROP TRIGGER events_no_update", "UPDATE events SET message = 'all fine' WHERE seq = 4", sqlite.GuardSQL("events_no_update"))
	v = &premis.Verifier{Auditor: ledgertest.AuditAt(t, path), Log: log, Public: key.Public().(ed25519.PublicKey)}
	res, err = v.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.WantProblem(t, res, premis.ProblemCheckpoint, 4, "rewritten")
	if again, _ := v.Check(ctx); again != res {
		t.Errorf("a failed Verifier checked again: %s", again)
	}
}

// TestVerifierFullSeesWhatChecksCannot: a row before the Verifier's point
// rewritten in place (its hash left as it was) passes the incremental
// check, which does not read it; Full walks it, fails the Verifier and
// records the failure.
func TestVerifierFullSeesWhatChecksCannot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path, evs := seeded(t)
	log, key := ledgertest.Checkpointed(t, ledgertest.AuditAt(t, path))
	v := &premis.Verifier{Auditor: ledgertest.AuditAt(t, path), Log: log, Key: key}
	if res, err := v.Check(ctx); err != nil || !res.Intact() {
		t.Fatalf("check: %v %s", err, res)
	}
	attack(t, path, "DROP TRIGGER events_no_update", "UPDATE events SET message = 'all fine' WHERE seq = 2", sqlite.GuardSQL("events_no_update"))
	if res, err := v.Check(ctx); err != nil || !res.Intact() {
		t.Fatalf("incremental check: %v %s, want it blind to seq 2 (what Full is for)", err, res)
	}
	res, err := v.Full(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.WantProblem(t, res, premis.ProblemLink, 2, "changed after it was written")
	if again, _ := v.Check(ctx); again.Intact() {
		t.Error("the Verifier checks as intact after Full failed")
	}
	cps, err := log.Read(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	if lv := cps.LastVerification(); lv == nil || lv.Status != premis.CheckpointFailed || !strings.Contains(lv.Problem, evs[1].ID) {
		t.Errorf("recorded: %+v, want a failed entry naming %s", lv, evs[1].ID)
	}
}

// TestCheckpointWritersShareALog: four appending processes' Verifiers
// checkpoint into one log at once; every line reads, verifies and is on
// the chain.
func TestCheckpointWritersShareALog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path, _ := seeded(t)
	log, key := ledgertest.Checkpointed(t, ledgertest.AuditAt(t, path))
	const writers, each = 4, 25
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			l, err := sqlite.Open(ctx, path)
			if err != nil {
				errs <- err
				return
			}
			defer l.Close()
			v := &premis.Verifier{Auditor: l, Log: log, Key: key, Every: 1}
			for i := range each {
				if _, err := l.Append(ctx, ledgertest.Event(fmt.Sprintf("w%d-%d", w, i), premis.Validation, 1)); err != nil {
					errs <- err
					return
				}
				if _, res, err := v.Checkpoint(ctx); err != nil || !res.Intact() {
					errs <- fmt.Errorf("checkpoint: %v %s", err, res)
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	cps, err := log.Read(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	if len(cps.Problems) > 0 || len(cps.Entries) < writers*each/2 || cps.Newest().Count != 4+writers*each {
		t.Fatalf("%d entries, newest %+v, problems %v", len(cps.Entries), cps.Newest(), cps.Problems)
	}
	l := ledgertest.AuditAt(t, path)
	for _, e := range cps.Entries {
		one := &premis.Checkpoints{Path: cps.Path, Entries: []premis.CheckpointEntry{e}}
		if v, err := premis.VerifyCheckpointed(ctx, l, one); err != nil || !v.Intact() {
			t.Fatalf("line %d (count %d) is not on the chain: %v %s", e.Line, e.Count, err, v)
		}
	}
}
