package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
)

func runSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dry := fs.Bool("dry-run", false, "check the manifest against the ledger and say what would be enqueued; record and enqueue nothing")
	asJSON := fs.Bool("json", false, "the result as one JSON object")
	wait := fs.Bool("wait", false, "follow the batch until every item has an outcome; exit 1 if any failed")
	waitTimeout := fs.Duration("wait-timeout", 0, "with --wait: give up after `DURATION` (0: never)")
	cfg := defaultConfig()
	if err := cfg.bind(ctx, fs, args, "redis", "ledger", "policy", "roots", "links"); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("submit: want exactly one MANIFEST")
	}
	m, dir, err := cfg.readManifest(fs.Arg(0))
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("manifest %s refused, nothing enqueued:\n%w", fs.Arg(0), err)}
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
	res, err := ingest.Submit(ctx, ledger, client, m, dir, sopt)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("batch %s: %w", m.BatchID, err)}
	}
	if *asJSON {
		if err := writeJSON(stdout, res); err != nil {
			return err
		}
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
