package ingest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

// routeEnv names the encoded envelope a child process routes (see init),
// and routeLedgerEnv its SQLite ledger.
const (
	routeEnv       = "LAZARET_TEST_ROUTE_ENVELOPE"
	routeLedgerEnv = "LAZARET_TEST_ROUTE_LEDGER"
)

// workerRSSBound is what routing one interchange of any size may cost a
// worker process (tracker issue 10).
const workerRSSBound = 64 << 20

// init lets this test binary double as the worker process that
// TestWorkerRoutesLargeInterchangeInBoundedMemory measures, before
// TestMain (which crash_test.go owns) and before any test allocates: with
// LAZARET_TEST_ROUTE_ENVELOPE set it routes that envelope through the
// worker's handler into the SQLite ledger named by LAZARET_TEST_ROUTE_LEDGER,
// prints its peak resident set (VmHWM) as JSON, and exits.
func init() {
	if payload := os.Getenv(routeEnv); payload != "" {
		os.Exit(routeChild([]byte(payload), os.Getenv(routeLedgerEnv)))
	}
}

type routeReport struct {
	Err     string  `json:"err,omitempty"`
	VmHWM   int64   `json:"vm_hwm"` // bytes
	Seconds float64 `json:"seconds"`
}

// nopBroker accepts every hand-off (there is none for a good interchange).
type nopBroker struct{}

func (nopBroker) EnqueueContext(context.Context, *asynq.Task, ...asynq.Option) (*asynq.TaskInfo, error) {
	return &asynq.TaskInfo{}, nil
}

func routeChild(payload []byte, ledgerPath string) int {
	ctx := context.Background()
	l, err := sqlite.Open(ctx, ledgerPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer l.Close()
	w := &ingest.Worker{Ledger: l, Broker: nopBroker{}, Policy: ingest.DefaultPolicy(), Master: validate.DefaultMasterPolicy(),
		Software: premis.Software{Name: "lazaret", Version: "rss"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	start := time.Now()
	herr := w.HandleValidate(ctx, asynq.NewTask(ingest.TypeValidate, payload))
	rep := routeReport{Seconds: time.Since(start).Seconds()}
	if herr != nil {
		rep.Err = herr.Error()
	}
	if rep.VmHWM, err = testenv.PeakRSS(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return 2
	}
	return 0
}

// TestWorkerRoutesLargeInterchangeInBoundedMemory routes the 50 MB
// benchmark interchange (fixtures.LargeInterchange, about 217,000 good
// messages) through the worker's handler into a real SQLite ledger, in a
// child process so that the peak resident set is the routing's alone: every
// message is accepted, the interchange's own ing event comes last, and the
// peak stays under 64 MiB. Before, every message's header and verdict were
// kept until the envelope's verdict was known: 226 MB.
func TestWorkerRoutesLargeInterchangeInBoundedMemory(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (Linux)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "large.edi")
	var buf bytes.Buffer
	if err := fixtures.LargeInterchange(&buf, 50<<20); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	sha, size := hex.EncodeToString(sum[:]), int64(buf.Len())
	messages := bytes.Count(buf.Bytes(), []byte("UNH+"))
	buf = bytes.Buffer{}
	env := &ingest.Envelope{V: ingest.EnvelopeVersion, CorrelationID: ingest.CorrelationID("rss", "large", sha), BatchID: "rss", ObjectID: "large",
		Kind: "edifact", Path: path, SHA256: sha, Size: size, Attempt: 1,
		Item: validate.Item{ObjectID: "large", Kind: "edifact", Path: "large.edi", SHA256: sha, Size: size}}
	payload, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	ledgerPath := filepath.Join(dir, "ledger.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), routeEnv+"="+string(payload), routeLedgerEnv+"="+ledgerPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.Bytes())
	}
	var rep routeReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("child said %q: %v", out, err)
	}
	t.Logf("%d messages, %d bytes: peak RSS %.1f MiB in %.1fs (%.0f messages/s)", messages, size, float64(rep.VmHWM)/(1<<20), rep.Seconds,
		float64(messages)/rep.Seconds)
	if rep.Err != "" {
		t.Fatalf("handler: %s", rep.Err)
	}

	var stored int64
	for _, p := range []string{ledgerPath, ledgerPath + "-wal"} {
		if st, err := os.Stat(p); err == nil {
			stored += st.Size()
		}
	}
	// Issue 10 asks for at most 400 bytes per accepted message: tables,
	// indexes and the read model together. A size, not a time: asserted.
	perMessage := float64(stored) / float64(messages)
	t.Logf("ledger: %d bytes on disk, %.0f bytes per accepted message", stored, perMessage)
	if perMessage > 400 {
		t.Errorf("ledger holds %.0f bytes per accepted message, want at most 400", perMessage)
	}
	l, err := sqlite.Open(context.Background(), ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	evs, err := l.Events(context.Background(), premis.Filter{CorrelationID: env.CorrelationID})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 2 || evs[0].Type != premis.FixityCheck || evs[len(evs)-1].Type != premis.Ingestion || len(evs[len(evs)-1].Members) > 0 {
		t.Fatalf("interchange events: want its fixity first and its own ing last, got %d events", len(evs))
	}
	if want := fmt.Sprintf("%d message(s): %d accepted, 0 parked, 0 other", messages, messages); evs[len(evs)-1].Note != want {
		t.Errorf("interchange ing note %q, want %q", evs[len(evs)-1].Note, want)
	}
	// Every message is a member of exactly one ing event, in order, and of
	// one val event: the fixture's VERMAS messages (D99B, which the
	// directory lacks) of one that warns so.
	next, validated, warned := 1, 0, 0
	for _, e := range evs[1 : len(evs)-1] {
		if e.Destination != "" || len(e.Members) == 0 {
			t.Fatalf("chunk event %s %s: destination %q, %d members", e.Type, e.ID, e.Destination, len(e.Members))
		}
		if e.Type == premis.Validation {
			validated += len(e.Members)
			for _, m := range e.Members {
				if w := m.Type == "VERMAS"; w != (e.Outcome == premis.Warning) {
					t.Fatalf("val event %s (%s, %q) holds message %d, a %s", e.ID, e.Outcome, e.Note, m.Number, m.Type)
				}
			}
			if e.Outcome == premis.Warning {
				warned += len(e.Members)
				if !strings.Contains(e.Note, "edifact.directory.unknown") {
					t.Fatalf("val event %s warns %q, not of the missing directory", e.ID, e.Note)
				}
			}
			continue
		}
		for _, m := range e.Members {
			if m.Number != next || m.ObjectID != ingest.MessageObjectID("large", strconv.Itoa(next)) {
				t.Fatalf("member %+v, want message %d", m, next)
			}
			next++
		}
	}
	if next-1 != messages || validated != messages || warned == 0 {
		t.Errorf("%d messages accepted as members and %d validated (%d with warnings), want %d", next-1, validated, warned, messages)
	}
	last := ingest.MessageObjectID("large", strconv.Itoa(messages))
	if got, err := l.Events(context.Background(), premis.Filter{ObjectID: last}); err != nil || len(got) != 2 ||
		got[0].Type != premis.Validation || got[1].Type != premis.Ingestion {
		t.Errorf("last message %s: %d events %v, want its chunk's val and ing", last, len(got), err)
	}
	if testenv.Race {
		t.Logf("race detector on: the RSS bound is not checked")
	} else if rep.VmHWM >= workerRSSBound {
		t.Errorf("peak RSS %d bytes (%.0f MiB), want under %d MiB", rep.VmHWM, float64(rep.VmHWM)/(1<<20), workerRSSBound>>20)
	}
}
