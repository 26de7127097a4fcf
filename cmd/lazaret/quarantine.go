package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
)

// runParked serves `lazaret quarantine ...` and `lazaret hold ...`.
func runParked(ctx context.Context, queue string, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("%s: want a subcommand: ls or reconcile", queue)
	}
	fs := flag.NewFlagSet(queue+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "one JSON object per line")
	dry := fs.Bool("dry-run", false, "say what would be replayed, replay nothing")
	cfg := defaultConfig()
	if err := cfg.bind(fs, args[1:], "redis", "ledger", "policy", "edi"); err != nil {
		return err
	}
	opt, err := cfg.redis()
	if err != nil {
		return err
	}
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	switch args[0] {
	case "ls":
		parked, err := ingest.ListParked(insp, queue)
		printParked(stdout, parked, *asJSON)
		return err
	case "reconcile":
		if queue != ingest.QueueQuarantine {
			return usageErr("reconcile works on the quarantine queue")
		}
		ledger, err := cfg.openLedger(ctx)
		if err != nil {
			return err
		}
		defer ledger.Close()
		client := asynq.NewClient(opt)
		defer client.Close()
		w := cfg.worker(ledger, client, cfg.logger(os.Stderr))
		ds, err := w.ReconcileQuarantine(ctx, insp, *dry)
		enc := json.NewEncoder(stdout)
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		if !*asJSON {
			fmt.Fprintln(tw, "ID\tOBJECT\tCODE\tACTION\tDETAIL")
		}
		replayed := 0
		for _, d := range ds {
			if d.Action == "replayed" {
				replayed++
			}
			if *asJSON {
				enc.Encode(map[string]any{"id": d.Parked.TaskID, "object_id": d.Parked.Held.Envelope.ObjectID, "code": d.Parked.Held.Code,
					"action": d.Action, "detail": d.Detail, "dry_run": *dry})
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Parked.TaskID, d.Parked.Held.Envelope.ObjectID, d.Parked.Held.Code, d.Action, d.Detail)
		}
		tw.Flush()
		if !*asJSON {
			fmt.Fprintf(stdout, "%d parked, %d replayed\n", len(ds), replayed)
		}
		return err
	}
	return usageErr("%s: unknown subcommand %q", queue, args[0])
}

func printParked(w io.Writer, parked []ingest.Parked, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, p := range parked {
			enc.Encode(map[string]any{"id": p.TaskID, "queue": p.Queue, "object_id": p.Held.Envelope.ObjectID, "batch_id": p.Held.Envelope.BatchID,
				"class": p.Held.Class, "code": p.Held.Code, "offset": p.Held.Offset, "page": p.Held.Page, "attempt": p.Held.Attempt,
				"event_id": p.Held.EventID, "registry": p.Held.Registry, "message": p.Held.Message})
		}
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOBJECT\tCLASS\tCODE\tOFFSET\tATTEMPT")
	for _, p := range parked {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", p.TaskID, p.Held.Envelope.ObjectID, p.Held.Class, p.Held.Code, int64OrDash(p.Held.Offset), p.Held.Attempt)
	}
	tw.Flush()
}
