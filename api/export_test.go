package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// failingSecondRead fails the second page of an export's second read,
// after the document has begun.
type failingSecondRead struct {
	*sqlite.Ledger
	reads, page int
}

func (f *failingSecondRead) Events(ctx context.Context, fl premis.Filter) ([]premis.Event, error) {
	if fl.AfterSeq == 0 {
		f.reads++
		f.page = 0
	}
	if f.page++; f.reads == 2 && f.page == 2 {
		return nil, errors.New("ledger busy")
	}
	return f.Ledger.Events(ctx, fl)
}

// TestPremisExportCutShortIsNoSuccess: a ledger failure once the document
// has begun aborts the response (the client reads an unexpected end) and
// is logged, rather than ending a 200 that looks whole.
func TestPremisExportCutShortIsNoSuccess(t *testing.T) {
	ctx := context.Background()
	l, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var evs []*premis.Event
	for i := range 2500 {
		corr := fmt.Sprintf("item-%d", i)
		evs = append(evs, &premis.Event{Key: premis.EventKey(corr, "", premis.Validation, 1), Type: premis.Validation, Outcome: premis.Success,
			ObjectID: corr, BatchID: "b", CorrelationID: corr, Kind: "tiff"})
	}
	if _, err := l.Append(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	ops := &ingest.Operator{Ledger: &failingSecondRead{Ledger: l}}
	s := &api.Server{Ops: ops, Metrics: api.NewMetrics(ops), Software: premis.Software{Name: "lazaret", Version: "test"},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/batches/b/premis")
	if err != nil {
		t.Fatal(err)
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if rerr == nil || strings.HasSuffix(string(body), "</premis:premis>\n") {
		t.Errorf("an export cut short read as whole: status %d, %d bytes, read error %v", resp.StatusCode, len(body), rerr)
	}
	if !strings.Contains(logs.String(), "ledger busy") {
		t.Errorf("the failure is not logged: %q", logs.String())
	}
}
