package premis_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lazaret/lazaret/premis"
	_ "github.com/lazaret/lazaret/premis/postgres" // registers postgres:// and postgresql://
	_ "github.com/lazaret/lazaret/premis/sqlite"   // registers "" (a file path) and sqlite://
)

// ExampleBackendFor opens a ledger by its setting, as the lazaret command's
// --ledger does: the setting's URL scheme picks the backend its package
// registered. Appending the same event key twice stores it once.
func ExampleBackendFor() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "lazaret-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	setting := "sqlite://" + filepath.Join(dir, "ledger.db")

	b, err := premis.BackendFor(setting)
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := b.Open(ctx, setting)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	ev := func() *premis.Event {
		return &premis.Event{Key: premis.EventKey("corr-1", "sha", premis.Ingestion, 1), Type: premis.Ingestion,
			DateTime: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC), Outcome: premis.Success, Destination: premis.Accepted,
			ObjectID: "master-1", CorrelationID: "corr-1", Attempt: 1, Agent: "lazaret/1.0"}
	}
	for range 2 {
		inserted, err := l.Append(ctx, ev())
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("inserted:", inserted[0])
	}
	evs, err := l.Events(ctx, premis.Filter{ObjectID: "master-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(evs), "event:", evs[0].Type, evs[0].Destination, "seq", evs[0].Seq)

	_, err = premis.BackendFor("mysql://lazaret@db/ledger")
	fmt.Println(err)
	// Output:
	// inserted: true
	// inserted: false
	// 1 event: ing accept seq 1
	// no ledger backend for "mysql://" (this program knows a file path, postgres://, postgresql://, sqlite://)
}
