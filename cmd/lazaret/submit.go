package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/validate"
)

func runSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dry := fs.Bool("dry-run", false, "check the manifest against the ledger and say what would be enqueued; record and enqueue nothing")
	asJSON := fs.Bool("json", false, "the result as one JSON object")
	cfg := defaultConfig()
	if err := cfg.bind(ctx, fs, args, "redis", "ledger", "policy", "roots"); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("submit: want exactly one MANIFEST")
	}
	if len(cfg.IngestRoots) > 0 {
		if _, err := validate.Within(cfg.IngestRoots, fs.Arg(0)); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("manifest refused, nothing read: %w", err)}
		}
	}
	m, dir, err := validate.ReadManifest(fs.Arg(0))
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
	res, err := ingest.Submit(ctx, ledger, client, m, dir, ingest.SubmitOptions{Policy: cfg.policy(), Software: software, DryRun: *dry})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("batch %s: %w", m.BatchID, err)}
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	for _, sk := range res.Skipped {
		fmt.Fprintf(stdout, "%s\tnot resubmitted: %s (event %s)\n", sk.ObjectID, cell(sk.Reason), sk.EventID)
	}
	verb := "enqueued"
	if *dry {
		verb = "would be enqueued (dry run: nothing recorded or enqueued)"
	}
	fmt.Fprintf(stdout, "batch %s: %d %s, %d already queued or recently done, %d already settled\n", res.BatchID, len(res.Enqueued), verb, len(res.Duplicates), len(res.Skipped))
	return nil
}
