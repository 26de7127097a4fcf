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
	cfg := defaultConfig()
	if err := cfg.bind(fs, args, "redis", "policy"); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("submit: want exactly one MANIFEST")
	}
	m, dir, err := validate.ReadManifest(fs.Arg(0))
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("manifest %s refused, nothing enqueued:\n%w", fs.Arg(0), err)}
	}
	opt, err := cfg.redis()
	if err != nil {
		return err
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	res, err := ingest.Submit(ctx, client, m, dir, ingest.SubmitOptions{Policy: cfg.policy()})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("batch %s: %w", m.BatchID, err)}
	}
	fmt.Fprintf(stdout, "batch %s: %d enqueued, %d already queued or recently done\n", res.BatchID, len(res.Enqueued), len(res.Duplicates))
	return nil
}
