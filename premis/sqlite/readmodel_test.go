package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
	"github.com/lazaret/lazaret/premis/sqlite"
)

func latestKeys(t *testing.T, l premis.Ledger, f premis.Filter) []string {
	t.Helper()
	f.Latest = true
	evs, err := l.Events(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Key)
	}
	return out
}

// TestReadModelBuiltAndChecked: a ledger written before the read model has
// it built from its events at Open, and answers Latest exactly as reading
// every event does (an audit open, without the read model); a read model
// changed past the ledger — a failure's row deleted, so that dlq ls would
// hide it — is named by Verify.
func TestReadModelBuiltAndChecked(t *testing.T) {
	path, _ := seeded(t)
	ctx := context.Background()
	open := []premis.Destination{premis.DeadLetter, premis.Quarantined, premis.AuditHold}
	filters := []premis.Filter{{}, {Destinations: open}, {Limit: 2}, {Destinations: open, Limit: 1}, {Destinations: open, Limit: 50},
		{Destination: premis.DeadLetter, Limit: 5}, {Destinations: open, Limit: 50, AfterSeq: 3}, {Destinations: open, Class: premis.Structural, Limit: 50}}

	// Without the read model: the answer from the events alone.
	attack(t, path, "DROP TABLE latest")
	audit, err := sqlite.OpenAudit(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]string
	for _, f := range filters {
		want = append(want, latestKeys(t, audit, f))
	}
	audit.Close()
	if len(want[0]) == 0 || len(want[1]) == 0 {
		t.Fatalf("the seed holds no latest outcomes or no failures: %v", want)
	}

	l, err := sqlite.Open(ctx, path) // builds the read model
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range filters {
		if got := latestKeys(t, l, f); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("filter %+v: read model says %v, the events %v", f, got, want[i])
		}
	}
	if v, err := premis.Verify(ctx, l); err != nil || !v.Intact() {
		t.Fatalf("fresh read model: %+v %v", v, err)
	}
	l.Close()

	attack(t, path, "DELETE FROM latest WHERE destination IN ('dead-letter', 'quarantine', 'audit-hold')")
	l, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	v, err := premis.Verify(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range v.Problems {
		found = found || p.Kind == premis.ProblemReadModel
	}
	if !found {
		t.Errorf("a read model with the failures deleted passes verify: %+v", v)
	}
	// Behind the group committer that serve and the workers open, the
	// same: serve's verifier (lazaret_ledger_intact) once called the read
	// model intact there, as the committer did not pass the check on.
	g := premis.NewGroupCommit(l, 0)
	defer g.Stop()
	res, err := (&premis.Verifier{Auditor: g}).Full(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found = false
	for _, p := range res.Problems {
		found = found || p.Kind == premis.ProblemReadModel
	}
	if !found {
		t.Errorf("behind a group committer, a read model with the failures deleted passes: %+v", res)
	}
}

// TestMemberQueriesUseTheirIndexes: a batch's events with members are
// found through events_members, not by reading the batch's every event
// (batch status asks it of every batch), and a message among members
// through its interchange's object id.
func TestMemberQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for f, want := range map[*premis.Filter][]string{
		{BatchID: "b", HasMembers: true, Types: []premis.EventType{premis.Ingestion}}: {"USING INDEX events_members"},
		{ObjectID: "inv#1"}: {"MULTI-INDEX OR", "USING INDEX events_object"},
	} {
		q, args := ledgersql.QueryLatest("events", "latest", *f, sqlite.Dialect)
		rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, w := range want {
			if !strings.Contains(strings.Join(plan, "; "), w) {
				t.Errorf("%+v: plan %q, want %s", *f, plan, w)
			}
		}
	}
}
