package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// submitBarItems is the size of batch from which submit draws a progress
// bar while it hands the items to the broker.
const submitBarItems = 1000

func declareSubmit(fs *pflag.FlagSet, defaults *Config) ([]string, action) {
	dry := fs.Bool("dry-run", false, "check the manifest against the ledger and say what would be enqueued; record and enqueue nothing")
	asJSON := fs.Bool("json", false, "the result as one JSON object")
	wait := fs.Bool("wait", false, "follow the batch until every item has an outcome; exit 1 if any failed")
	waitTimeout := fs.Duration("wait-timeout", 0, "with --wait: give up after `DURATION` (0: never)")
	// One action, printed for a person: the log says only what went wrong
	// (a flag, LAZARET_LOG_LEVEL or the file still choose another level).
	defaults.LogLevel = "warn"
	return []string{"redis", "ledger", "policy", "roots", "links"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usageErr("submit: want exactly one MANIFEST")
		}
		m, dir, err := cfg.readManifest(args[0])
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("manifest %s refused, nothing enqueued:\n%w", args[0], err)}
		}
		opt, err := cfg.redis()
		if err != nil {
			return err
		}
		if !*dry {
			// Nothing is recorded for a broker that cannot be reached: the
			// items would wait as submitted until a reconcile.
			if err := pingBroker(ctx, opt, 3*time.Second); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("broker %s unreachable, nothing recorded or enqueued: %w", redactURL(cfg.RedisURL), err)}
			}
		}
		opt, ledger, err := cfg.connect(ctx)
		if err != nil {
			return err
		}
		defer ledger.Close()
		client := asynq.NewClient(opt)
		defer client.Close()
		insp := asynq.NewInspector(opt)
		defer insp.Close()
		// Through the operator, so that a changed entry of an open failure is
		// replayed, not skipped.
		sopt := cfg.operator(cfg.worker(ledger, client, cfg.logger(stderr)), client, insp, opt).SubmitOptions()
		sopt.DryRun = *dry
		var bar *progressbar.ProgressBar
		if !*dry && isTerminal(stderr) && len(m.Items) >= submitBarItems {
			// A large batch takes a while to hand over: a bar on the
			// terminal, never in a pipe or a log.
			sopt.Progress = func(done, total int) {
				if bar == nil {
					bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(rawWriter(stderr)), progressbar.OptionShowCount(),
						progressbar.OptionSetWidth(30), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionShowIts(),
						progressbar.OptionSetItsString("items"), progressbar.OptionSetDescription("enqueueing batch "+safeText(m.BatchID)))
				}
				_ = bar.Set(done)
			}
		}
		res, err := ingest.Submit(ctx, ledger, client, m, dir, sopt)
		if bar != nil {
			_ = bar.Finish()
			fmt.Fprintln(stderr)
		}
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("batch %s: %w", m.BatchID, err)}
		}
		var would []inspectResult
		if *dry {
			// Every rule that needs no broker, as inspect --batch runs them:
			// where the items would go.
			if would, err = predict(ctx, *cfg, m, dir, res.Enqueued, stderr); err != nil {
				return &exitError{code: 1, err: err}
			}
		}
		if *asJSON {
			if !*dry {
				return writeJSON(stdout, res)
			}
			return writeJSON(stdout, struct {
				*ingest.SubmitResult
				Would []inspectResult `json:"would"`
			}{res, would})
		} else {
			for _, sk := range res.Skipped {
				fmt.Fprintf(stdout, "%s\tnot resubmitted: %s (event %s)\n", sk.ObjectID, cell(sk.Reason), sk.EventID)
			}
			for _, r := range res.Replayed {
				fmt.Fprintf(stdout, "%s\t%s (failure %s)\n", r.ObjectID, cell(r.Reason), r.EventID)
			}
			verb := "enqueued"
			if *dry {
				verb = "would be enqueued (dry run: nothing recorded or enqueued)"
			}
			fmt.Fprintf(stdout, "batch %s: %d %s, %d replayed with changed entries, %d already queued or recently done, %d already settled\n",
				res.BatchID, len(res.Enqueued), verb, len(res.Replayed), len(res.Duplicates), len(res.Skipped))
			if *dry {
				printPrediction(stdout, would)
			}
		}
		if !*wait || *dry {
			return nil
		}
		// The progress goes to stderr when stdout carries JSON.
		out := stdout
		if *asJSON {
			out = stderr
		}
		p, err := watchBatch(ctx, ledger, m.BatchID, out, 500*time.Millisecond, *waitTimeout)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		fmt.Fprintln(out, progressLine(p))
		return waitVerdict(p)
	}
}

// predict runs, on the items a dry run would enqueue, every check that
// needs no broker and no ledger — the manifest entry's rules, the content
// rules and fixity — with the worker's execute, as inspect --batch does:
// one result per item, and per message of an interchange.
func predict(ctx context.Context, cfg Config, m *validate.Manifest, dir string, ids []string, stderr io.Writer) ([]inspectResult, error) {
	enqueued := make(map[string]bool, len(ids))
	for _, id := range ids {
		enqueued[id] = true
	}
	w := cfg.worker(nil, nil, cfg.logger(io.Discard))
	out := []inspectResult{}
	regsLoaded := false
	for i := range m.Items {
		it := m.Items[i]
		if !enqueued[it.ObjectID] {
			continue
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		path, err := validate.ResolvePath(dir, it.Path)
		if err != nil {
			return nil, err
		}
		if it.Kind == "edifact" && !regsLoaded {
			regsLoaded = true
			if _, err := w.Registries.Refresh(); err != nil {
				fmt.Fprintf(stderr, "registries: %v (interchanges are checked against the built-in set)\n", err)
			}
		}
		if err := inspect(ctx, w, path, it.Kind, &it, func(r *inspectResult) error { out = append(out, r.kept()); return nil }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// printPrediction says where a dry run's items would go: a count by
// destination, items and messages apart (an interchange whose envelope
// passes is accepted, its messages counted on their own), then every one
// that would not be accepted, with its code.
func printPrediction(w io.Writer, would []inspectResult) {
	items, msgs := map[string]int{}, map[string]int{}
	seen := map[string]bool{} // interchanges counted by their messages
	var failing []inspectResult
	for _, r := range would {
		switch {
		case r.whole:
			items[r.Verdict]++
		default:
			msgs[r.Verdict]++
			if !seen[r.ObjectID] {
				seen[r.ObjectID] = true
				items[string(premis.Accepted)]++
			}
		}
		if r.Verdict != string(premis.Accepted) {
			failing = append(failing, r)
		}
	}
	tally := func(c map[string]int) string {
		var parts []string
		for _, d := range premis.Destinations() {
			if n := c[string(d)]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, d))
			}
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, ", ")
	}
	line := "checked as a worker would (inspect --batch): items " + tally(items)
	if len(msgs) > 0 {
		line += "; messages " + tally(msgs)
	}
	fmt.Fprintln(w, line)
	for _, r := range failing {
		id := r.ObjectID
		if !r.whole && r.MessageRef != "" {
			id += "#" + r.MessageRef
		}
		fmt.Fprintf(w, "  %s\twould be %s\t%s\t%s\n", cell(id), r.Verdict, dash(r.Code), cell(truncate(r.Message, 160)))
	}
}

// pingBroker asks the broker (a Sentinel's primary too) for a PONG within
// timeout.
func pingBroker(ctx context.Context, opt asynq.RedisConnOpt, timeout time.Duration) error {
	rc, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil
	}
	defer rc.Close()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return rc.Ping(pctx).Err()
}
