package ingest_test

import (
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
	"sync/atomic"
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

// bombWorkerEnv makes this test binary a worker at concurrency 4 that
// drains the queue at the Redis URL it names into the ledger named by
// LAZARET_TEST_CHILD_LEDGER, until LAZARET_TEST_BOMB_ITEMS decisions are
// recorded, then prints its peak resident set and exits.
const bombWorkerEnv = "LAZARET_TEST_BOMB_WORKER"

func bombWorker(url string) int {
	want, _ := strconv.Atoi(os.Getenv("LAZARET_TEST_BOMB_ITEMS"))
	ro, err := asynq.ParseRedisURI(url)
	if err != nil {
		return fail(err)
	}
	l, err := sqlite.Open(context.Background(), os.Getenv("LAZARET_TEST_CHILD_LEDGER"))
	if err != nil {
		return fail(err)
	}
	client := asynq.NewClient(ro)
	var settled atomic.Int64
	done := make(chan struct{})
	w := &ingest.Worker{Ledger: premis.NewGroupCommit(l, 0), Broker: client, Policy: ingest.DefaultPolicy(), Master: validate.DefaultMasterPolicy(),
		Software: premis.Software{Name: "lazaret", Version: "bombs"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observe: func(o ingest.Observation) {
			if o.Destination.Terminal() && settled.Add(1) == int64(want) {
				close(done)
			}
		}}
	srv, mux := ingest.NewServer(ro, w, ingest.ServerConfig{Concurrency: 4, PollInterval: 50 * time.Millisecond})
	if err := srv.Start(mux); err != nil {
		return fail(err)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		return fail(fmt.Errorf("%d of %d items settled", settled.Load(), want))
	}
	srv.Shutdown()
	hwm, err := testenv.PeakRSS()
	if err != nil {
		return fail(err)
	}
	fmt.Printf(`{"vm_hwm":%d}`+"\n", hwm)
	return 0
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 2
}

// TestWorkerFedOnlyBombs: a real worker process at concurrency 4, fed
// nothing but the memory bombs of tracker issue 8 (each twice), records a
// decision for every one — the refused ones named by their limit — and its
// peak resident set stays under 1 GiB.
func TestWorkerFedOnlyBombs(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (Linux)")
	}
	b := setup(t, fastPolicy())
	ctx := context.Background()
	m := &validate.Manifest{BatchID: "bombs", Submitter: "attacker"}
	refused := map[string]bool{}
	for round := range 2 {
		for _, bm := range fixtures.Bombs() {
			name := fmt.Sprintf("%s-%d.tif", bm.Name, round)
			path := filepath.Join(b.dir, name)
			if _, err := bm.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			sum, err := fileSHA256(path)
			if err != nil {
				t.Fatal(err)
			}
			id := strings.TrimSuffix(name, ".tif")
			m.Items = append(m.Items, validate.Item{ObjectID: id, Kind: "tiff", Path: name, SHA256: sum, ColorProfile: "sRGB", ResolutionDPI: "400"})
			refused[id] = bm.What != ""
		}
	}
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, b.dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), bombWorkerEnv+"="+b.url,
		"LAZARET_TEST_CHILD_LEDGER="+filepath.Join(b.dir, "ledger.db"), "LAZARET_TEST_BOMB_ITEMS="+strconv.Itoa(len(m.Items)))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bomb worker: %v", err)
	}
	var rep struct {
		VmHWM int64 `json:"vm_hwm"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("bomb worker said %q: %v", out, err)
	}
	t.Logf("worker at concurrency 4, %d bombs: peak RSS %.0f MiB", len(m.Items), float64(rep.VmHWM)/(1<<20))
	if testenv.Race {
		t.Logf("race detector on: the RSS bound is not checked")
	} else if rep.VmHWM >= 1<<30 {
		t.Errorf("peak RSS %.0f MiB, want under 1024 MiB", float64(rep.VmHWM)/(1<<20))
	}
	latest, err := b.ledger.Events(ctx, premis.Filter{BatchID: m.BatchID, Latest: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(latest) != len(m.Items) {
		t.Fatalf("%d items recorded, want %d", len(latest), len(m.Items))
	}
	for _, e := range latest {
		switch {
		case !e.Destination.Terminal():
			t.Errorf("%s: %s, not settled", e.ObjectID, e.Destination)
		case refused[e.ObjectID] && !strings.HasPrefix(e.Code, "limit."):
			t.Errorf("%s: %s %s (%s), want a limit refusal", e.ObjectID, e.Destination, e.Code, e.Message)
		}
	}
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
