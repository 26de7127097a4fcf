//go:build !nodemo

// The demo runs Redis in-process with miniredis, a test server: built in
// by default so that a fresh machine needs nothing but Go (DESIGN's
// embedded default); `make build TAGS=nodemo` leaves it, and miniredis,
// out of a production binary (demo_nodemo.go).

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// declareDemo declares lazaret demo, which runs the whole archive lane in
// one process on the embedded default: Redis in-process (miniredis) and an
// SQLite ledger in a data folder. It submits the generated fixture batch,
// waits until every item has settled, prints where each went, writes the
// PREMIS XML, and exits 0 only if every fixture landed where it must.
func declareDemo(fs *pflag.FlagSet, defaults *Config) ([]string, action) {
	data := fs.String("data", "", "data folder, kept (default: a new temporary folder, removed at the end unless --keep)")
	keep := fs.Bool("keep", false, "keep the temporary data folder (ledger, batches, PREMIS XML, CONTRL, log) and print where it is")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up if items have not settled by then")
	asJSON := fs.Bool("json", false, "one JSON object per outcome on standard output (item, check, event); the narrative goes to standard error")
	defaults.RetryBase, defaults.LogLevel = 200*time.Millisecond, "warn"
	return []string{"worker", "policy", "master", "edi"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		if len(args) > 0 {
			return usageErr("demo: unexpected arguments %q", args)
		}
		human := stdout
		if *asJSON {
			human = stderr
		}
		if *data == "" {
			d, err := os.MkdirTemp("", "lazaret-demo-")
			if err != nil {
				return err
			}
			*data = d
			if !*keep {
				// Deferred first, so it runs last: after the ledger, the
				// workers and the log are closed.
				defer func() {
					if os.RemoveAll(d) == nil {
						fmt.Fprintf(human, "\nthe data folder %s was removed (--keep keeps it, for the commands above)\n", d)
					}
				}()
			}
		}
		if err := os.MkdirAll(*data, 0o755); err != nil {
			return err
		}
		logFile, err := os.Create(filepath.Join(*data, "lazaret.log"))
		if err != nil {
			return err
		}
		defer logFile.Close()
		log := cfg.logger(logFile)

		mr := miniredis.NewMiniRedis()
		if err := mr.Start(); err != nil {
			return fmt.Errorf("embedded redis: %w", err)
		}
		defer mr.Close()
		ffCtx, stopFF := context.WithCancel(ctx)
		defer stopFF()
		go fastForward(ffCtx, mr) // miniredis keeps no clock of its own: TTLs expire only when told
		opt := asynq.RedisClientOpt{Addr: mr.Addr()}

		cfg.Ledger = filepath.Join(*data, "ledger.db")
		inner, err := cfg.openLedger(ctx)
		if err != nil {
			return err
		}
		ledger := premis.NewGroupCommit(inner, 0)
		defer ledger.Close()

		archive, err := fixtures.WriteArchiveBatch(filepath.Join(*data, "archive"))
		if err != nil {
			return fmt.Errorf("fixtures: %w", err)
		}
		logistics, err := fixtures.WriteLogisticsBatch(filepath.Join(*data, "logistics"))
		if err != nil {
			return fmt.Errorf("fixtures: %w", err)
		}
		outbox := filepath.Join(*data, "contrl-outbox")
		fmt.Fprintf(human, "lazaret %s demo\n  data folder: %s\n  embedded redis: %s\n  ledger: %s\n  batches: %s, %s\n  reply outbox (CONTRL, APERAK): %s\n\n",
			version, *data, mr.Addr(), cfg.Ledger, archive.Manifest, logistics.Manifest, outbox)

		client := asynq.NewClient(opt)
		defer client.Close()
		insp := asynq.NewInspector(opt)
		defer insp.Close()
		w := cfg.worker(ledger, client, log)
		w.Outbox = outbox
		stop, err := startWorkers(ctx, w, cfg.operator(w, client, insp, opt), opt, ingest.ServerConfig{Concurrency: cfg.Concurrency, PollInterval: 100 * time.Millisecond}, 5*time.Second)
		if err != nil {
			return err
		}
		defer stop()
		items := map[string]demoItem{}
		expect := map[string]fixtures.Expectation{}
		var order []string
		submitted := 0
		for _, batch := range []*fixtures.Batch{archive, logistics} {
			m, dir, err := validate.ReadManifestFile(batch.Manifest)
			if err != nil {
				return err
			}
			res, err := ingest.Submit(ctx, ledger, client, m, dir, ingest.SubmitOptions{Policy: cfg.policy(), Software: software})
			if err != nil {
				return err
			}
			submitted += len(res.Enqueued)
			sha := map[string]string{}
			for _, it := range m.Items {
				sha[it.ObjectID] = it.SHA256
			}
			for _, key := range batch.Order {
				obj, _, _ := strings.Cut(key, "#")
				items[key] = demoItem{batch: m.BatchID, sha: sha[obj]}
				expect[key] = batch.Expect[key]
				order = append(order, key)
			}
		}
		fmt.Fprintf(human, "submitted %d items (%d outcomes expected, one per master, interchange or message); waiting for every one to settle...\n\n", submitted, len(order))
		final, err := waitSettled(ctx, ledger, items, *timeout)
		if err != nil {
			return err
		}
		brokerOK := brokerPlacement(insp)

		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ITEM\tDESTINATION\tCLASS\tCODE\tWHERE\tOFFSET\tREASON\tAS EXPECTED")
		bad := 0
		var firstFailure string
		for _, id := range order {
			o, want := final[id], expect[id]
			e := o.Event // what the table shows: for a member, its chunk's ing event, as the member's
			e.Destination = o.Destination
			if o.Member != nil {
				e.Offset = &o.Member.Offset
			}
			check := "yes"
			switch {
			case string(e.Destination) != want.Destination || string(e.Class) != want.Class || e.Code != want.Code:
				check = fmt.Sprintf("NO: want %s/%s/%s", want.Destination, dash(want.Class), dash(want.Code))
			case want.Page != 0 && (e.Page == nil || *e.Page != want.Page):
				check = fmt.Sprintf("NO: want page %d", want.Page)
			case !brokerOK(e):
				check = "NO: the broker does not hold it where the ledger says"
			}
			if check != "yes" {
				bad++
			}
			if firstFailure == "" && e.Destination == premis.Quarantined {
				firstFailure = id
			}
			if *asJSON {
				o.Event.Envelope = nil
				writeJSON(stdout, demoLine{Item: id, Check: check, Outcome: o})
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, e.Destination, dash(string(e.Class)), dash(e.Code), position(e.Position),
				int64OrDash(e.Offset), cell(truncate(reasonOf(e), 60)), check)
		}
		if !*asJSON {
			tw.Flush()
			fmt.Fprint(human, `
DESTINATION: accept = ingested; dead-letter = asynq's archived set, for engineering (structural: the bytes are
broken); quarantine = parked until a registry or the metadata is fixed (semantic, regulatory); audit-hold = a person
decides (poison cap). WHERE: a TIFF page and tag, or an EDIFACT segment (UNH = 1), element and component; OFFSET: the
byte in the file (0-based). REASON: what the code means (docs/codes.md). AS EXPECTED: the demo's own check of ledger
and broker.
`)
		}

		xmlPath := filepath.Join(*data, "premis.xml")
		problem, err := exportVerify(ctx, cfg, ledger)
		if err != nil {
			return err
		}
		if problem != "" {
			return &exitError{code: 1, err: fmt.Errorf("the demo's ledger is not intact, nothing exported: %s", problem)}
		}
		n, err := exportFile(ctx, xmlPath, ledger, premis.Filter{}, premis.ExportOptions{})
		if err != nil {
			return err
		}
		contrls, _ := filepath.Glob(filepath.Join(outbox, "*.contrl.edi"))
		aperaks, _ := filepath.Glob(filepath.Join(outbox, "*.aperak.edi"))
		fmt.Fprintf(human, "\n%d PREMIS events in the ledger; PREMIS XML: %s\n%d CONTRL and %d APERAK reports in %s\nlog: %s\n", n, xmlPath, len(contrls), len(aperaks), outbox, logFile.Name())
		if bad > 0 {
			return &exitError{code: 1, err: fmt.Errorf("%d of %d outcomes are not where they should be", bad, len(order))}
		}
		fmt.Fprintf(human, "all %d outcomes landed where they should.\n", len(order))
		if !*asJSON {
			ledgerFlag := "--ledger " + cfg.Ledger
			me := selfCommand()
			fmt.Fprintf(human, "\nnext, on this demo's ledger (the embedded Redis is gone, so the broker-side commands need a real one):\n")
			fmt.Fprintf(human, "  %s quarantine ls %s\n", me, ledgerFlag)
			if firstFailure != "" {
				fmt.Fprintf(human, "  %s quarantine show %s %s\n", me, firstFailure, ledgerFlag)
			}
			fmt.Fprintf(human, "  %s events export %s -o premis.xml\n  %s ledger verify %s\n", me, ledgerFlag, me, ledgerFlag)
		}
		return nil
	}
}

// selfCommand is how to run this binary again, as a person would type it:
// its path (bin/lazaret after make build), "lazaret" when that is the one
// on PATH, or "go run ./cmd/lazaret" for go run's temporary binary.
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "lazaret"
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/lazaret"
	}
	if onPath, err := exec.LookPath("lazaret"); err == nil {
		if a, b := canonical(onPath), canonical(exe); a == b {
			return "lazaret"
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, exe); err == nil && !strings.HasPrefix(rel, "..") {
			return "./" + rel
		}
	}
	return exe
}

func canonical(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// reasonOf is what a person reads of an outcome: the meaning of its code,
// or its message.
func reasonOf(e premis.Event) string {
	if e.Destination == premis.Accepted {
		return "passed every check"
	}
	if h, ok := api.LookupCode(e.Code); ok && h.Meaning != "" {
		return h.Meaning
	}
	return e.Message
}

// demoLine is one line of lazaret demo --json.
type demoLine struct {
	Item  string `json:"item"`
	Check string `json:"check"` // "yes", or what is wrong
	// The item's latest outcome: destination, event and, for a message
	// accepted with its chunk, its entry there.
	ingest.Outcome
}

func fastForward(ctx context.Context, mr *miniredis.Miniredis) {
	const step = 100 * time.Millisecond
	t := time.NewTicker(step)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			mr.FastForward(step)
		}
	}
}

// demoItem is what names an outcome the demo waits for, beside its object
// id: the batch and the digest it was submitted with.
type demoItem struct{ batch, sha string }

// waitSettled polls the ledger until every item has settled and returns
// where each is, by object id.
func waitSettled(ctx context.Context, l premis.Ledger, items map[string]demoItem, timeout time.Duration) (map[string]ingest.Outcome, error) {
	deadline := time.Now().Add(timeout)
	for {
		final := map[string]ingest.Outcome{}
		for obj, it := range items {
			o, ok, err := ingest.ItemOutcome(ctx, l, it.batch, obj, it.sha)
			if err != nil {
				return nil, err
			}
			if ok {
				final[obj] = o
			}
		}
		if len(final) == len(items) {
			return final, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d items settled within %s", len(final), len(items), timeout)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// brokerPlacement returns a check that the broker holds an item where its
// ledger event says: archived for the DLQ, a parked task for quarantine and
// audit-hold.
func brokerPlacement(insp *asynq.Inspector) func(premis.Event) bool {
	return func(e premis.Event) bool {
		switch e.Destination {
		case premis.DeadLetter:
			ti, err := insp.GetTaskInfo(ingest.QueueIngest, e.TaskID)
			return err == nil && ti.State == asynq.TaskStateArchived
		case premis.Quarantined, premis.AuditHold:
			ti, err := insp.GetTaskInfo(ingest.QueueFor(e.Destination), ingest.HeldTaskID(e.Key))
			return err == nil && ti.State == asynq.TaskStatePending
		case premis.Accepted:
			ti, err := insp.GetTaskInfo(ingest.QueueIngest, e.TaskID)
			return errors.Is(err, asynq.ErrTaskNotFound) || (err == nil && ti.State == asynq.TaskStateCompleted)
		}
		return false
	}
}
