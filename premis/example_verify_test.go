package premis_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// ExampleVerify chains two events, verifies the ledger, forges the second
// event the way the issue did (trigger dropped, row updated) and verifies
// again.
func ExampleVerify() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "lazaret-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ledger.db")
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, t := range []premis.EventType{premis.Validation, premis.FixityCheck} {
		e := &premis.Event{ID: fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i+1), Key: premis.EventKey("corr-1", "sha", t, 1),
			Type: t, DateTime: at, Outcome: premis.Failure, Class: premis.Structural, Code: "fixity.mismatch",
			Destination: premis.DeadLetter, ObjectID: "master-1", Attempt: 1, Agent: "lazaret/1.0"}
		if _, err := l.Append(ctx, e); err != nil {
			fmt.Println(err)
			return
		}
	}
	v, err := premis.Verify(ctx, l)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v)
	l.Close()

	db, _ := sql.Open("sqlite", "file:"+path)
	db.Exec(`DROP TRIGGER events_no_update`)
	db.Exec(`UPDATE events SET type = 'ing', outcome = 'suc', destination = 'accept' WHERE seq = 2`)
	db.Close()
	_, err = sqlite.Open(ctx, path)
	fmt.Println(err != nil) // the ledger no longer opens
	audit, err := sqlite.OpenAudit(ctx, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer audit.Close()
	v, err = premis.Verify(ctx, audit)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range v.Problems {
		if p.Kind == premis.ProblemLink {
			fmt.Println(p.Kind, "at seq", p.Seq, "event", p.EventID)
			continue
		}
		fmt.Println(p)
	}
	// Output:
	// 2 events, chain intact, head 224bae42f0912e1c47779a71bd9e129e2ce572c765277e0b21c3a3f2e11b273c
	// true
	// link at seq 2 event 00000000-0000-4000-8000-000000000002
	// guard: events_no_update: missing
	// read-model: 1 items' latest outcome in the read model is not their latest event (listings would show them wrongly)
}
