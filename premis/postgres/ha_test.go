package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/postgres"
)

// TestReadOnlyPrimaryIsWaitedOut: the server turns read-only under an open
// ledger (as a primary demoted to a standby does; here the ledger's own
// role gets default_transaction_read_only and its sessions are cut). An
// append is refused as premis.ErrBusy, saying the ledger is read-only, so
// the workers wait instead of dead-lettering; once the server is writable
// again the same ledger appends, without being reopened. Before, the
// refusal was no ErrBusy, and the pooled read-only sessions kept refusing
// after the server was writable again. The ledger also opens through a
// multi-host URL whose first host is down, with
// target_session_attrs=read-write.
func TestReadOnlyPrimaryIsWaitedOut(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testenv.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	role := fmt.Sprintf("lazaret_ha_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN SUPERUSER"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testenv.PostgresDSN())
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		c.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role)
		c.Exec(context.Background(), "DROP OWNED BY "+role)
		c.Exec(context.Background(), "DROP ROLE "+role)
	})
	if !strings.HasPrefix(dsn, "postgres://postgres@127.0.0.1:5432/") {
		t.Skipf("the multi-host form is built from the default DSN, not %s", dsn)
	}
	rest := strings.TrimPrefix(dsn, "postgres://postgres@127.0.0.1:5432/")
	n := 0
	event := func() *premis.Event {
		n++
		return &premis.Event{Key: fmt.Sprintf("ha-%d", n), Type: premis.Validation, ObjectID: "o", CorrelationID: "c", SHA256: strings.Repeat("a", 64),
			Outcome: premis.Success, Destination: premis.Accepted, Attempt: n, Agent: "lazaret/test"}
	}
	// Both forms: a single host, whose pooled sessions turn read-only
	// (SQLSTATE 25006), and a multi-host URL with a dead first host and
	// target_session_attrs=read-write, which refuses a read-only server at
	// connect.
	for _, c := range []struct{ name, dsn, refusal string }{
		{"single host", "postgres://" + role + "@127.0.0.1:5432/" + rest, "waiting for a writable primary"},
		{"multi-host read-write", "postgres://" + role + "@127.0.0.1:1,127.0.0.1:5432/" + rest + "&target_session_attrs=read-write", "read only connection"},
	} {
		l, err := postgres.Open(ctx, c.dsn)
		if err != nil {
			t.Fatalf("%s: open: %v", c.name, err)
		}
		if _, err := l.Append(ctx, event()); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := admin.Exec(ctx, "ALTER ROLE "+role+" SET default_transaction_read_only = on"); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role); err != nil {
			t.Fatal(err)
		}
		var refused error
		for try := 0; try < 5 && refused == nil; try++ {
			_, err := l.Append(ctx, event())
			if err == nil {
				t.Fatalf("%s: a read-only server took an append", c.name)
			}
			if strings.Contains(err.Error(), c.refusal) {
				refused = err
			}
		}
		if !errors.Is(refused, premis.ErrBusy) {
			t.Fatalf("%s: refused with %v, want premis.ErrBusy saying %q", c.name, refused, c.refusal)
		}
		if _, err := admin.Exec(ctx, "ALTER ROLE "+role+" RESET default_transaction_read_only"); err != nil {
			t.Fatal(err)
		}
		var last error
		for try := 0; try < 5; try++ {
			if _, last = l.Append(ctx, event()); last == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if last != nil {
			t.Fatalf("%s: the server is writable again, the ledger still refuses: %v", c.name, last)
		}
		l.Close()
	}
}
