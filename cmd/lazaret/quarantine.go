package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os/user"
	"text/tabwriter"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// failureCommand describes `lazaret dlq|quarantine|hold`.
type failureCommand struct {
	name        string
	destination premis.Destination
	queue       string
	subcommands map[string]bool
}

var failureCommands = map[string]failureCommand{
	"dlq":        {"dlq", premis.DeadLetter, ingest.QueueIngest, map[string]bool{"ls": true, "show": true, "replay": true, "redrive": true, "discard": true}},
	"quarantine": {"quarantine", premis.Quarantined, ingest.QueueQuarantine, map[string]bool{"ls": true, "show": true, "replay": true, "discard": true, "reconcile": true}},
	"hold":       {"hold", premis.AuditHold, ingest.QueueAuditHold, map[string]bool{"ls": true, "show": true, "release": true, "reject": true}},
}

func defaultOperator() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}

func runFailures(ctx context.Context, fc failureCommand, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || !fc.subcommands[args[0]] {
		return usageErr("%s: want one of %v", fc.name, keys(fc.subcommands))
	}
	sub := args[0]
	fs := flag.NewFlagSet(fc.name+" "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "one JSON object per line")
	class := fs.String("class", "", "only this class")
	code := fs.String("code", "", "only this failure code")
	kind := fs.String("kind", "", "only this kind (tiff, edifact)")
	batch := fs.String("batch", "", "only this batch")
	since := fs.Duration("since", 0, "only failures newer than this (e.g. 24h)")
	limit := fs.Int("limit", 0, "at most this many")
	operator := fs.String("operator", defaultOperator(), "who acts (recorded in the PREMIS event)")
	reason := fs.String("reason", "", "why (recorded in the PREMIS event)")
	file := fs.String("file", "", "replay with this corrected file")
	rate := fs.Float64("rate", 10, "redrive: items per second")
	force := fs.Bool("force", false, "redrive: even items that still fail the same way")
	dry := fs.Bool("dry-run", false, "say what would happen, change nothing")
	cfg := defaultConfig()
	if err := cfg.bind(fs, args[1:], "redis", "ledger", "policy", "master", "edi", "roots"); err != nil {
		return err
	}
	opt, ledger, err := cfg.connectExisting(ctx)
	if err != nil {
		return err
	}
	defer ledger.Close()
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	client := asynq.NewClient(opt)
	defer client.Close()
	w := cfg.worker(ledger, client, cfg.logger(stderr))
	ops := cfg.operator(w, client, insp, opt)
	filter := ingest.FailureFilter{Class: premis.Class(*class), Code: *code, Kind: *kind, BatchID: *batch, Destination: fc.destination, Limit: *limit}
	if *since > 0 {
		filter.Since = time.Now().Add(-*since)
	}
	needID := func() (string, error) {
		if fs.NArg() != 1 {
			return "", usageErr("%s %s: want exactly one ID (from %s ls)", fc.name, sub, fc.name)
		}
		return fs.Arg(0), nil
	}
	enc := json.NewEncoder(stdout)
	switch sub {
	case "ls":
		list, err := ingest.Failures(ctx, ledger, filter)
		if err != nil {
			return err
		}
		if *asJSON {
			for _, f := range list {
				enc.Encode(f)
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tOBJECT\tKIND\tCLASS\tCODE\tOFFSET\tATTEMPT\tAT")
		for _, f := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", f.ID, f.ObjectID, f.Kind, f.Class, f.Code, int64OrDash(f.Offset), f.Attempt, f.DateTime.Format(time.RFC3339))
		}
		return tw.Flush()
	case "show":
		id, err := needID()
		if err != nil {
			return err
		}
		f, history, ferr := ingest.GetFailure(ctx, ledger, id)
		if history == nil {
			return &exitError{code: 1, err: ferr}
		}
		state := ops.BrokerState(f)
		if *asJSON {
			for i := range history {
				history[i].Envelope = nil
			}
			return enc.Encode(map[string]any{"failure": f, "open": ferr == nil, "broker": state, "history": history})
		}
		fmt.Fprintf(stdout, "failure %s\n  object   %s (batch %s, %s)\n  class    %s\n  code     %s\n  where    offset %s page %s segment %d element %d:%d\n  message  %s\n  broker   %s\n",
			f.ID, f.ObjectID, f.BatchID, f.Kind, f.Class, f.Code, int64OrDash(f.Offset), intOrDash(f.Page), f.Segment, f.Element, f.Component, f.Message, state)
		if ferr != nil {
			fmt.Fprintf(stdout, "  status   %v\n", ferr)
		}
		fmt.Fprintln(stdout, "history:")
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		for _, e := range history {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\tattempt %d\t%s\t%s\n", e.DateTime.Format(time.RFC3339), e.Type, e.Outcome, dash(string(e.Destination)), dash(e.Code), e.Attempt, dash(e.Operator), e.Note)
		}
		return tw.Flush()
	case "replay", "release":
		id, err := needID()
		if err != nil {
			return err
		}
		res, err := ops.Replay(ctx, id, ingest.ReplayOptions{Operator: *operator, Reason: *reason, File: *file, DryRun: *dry})
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		return printAction(stdout, res, *asJSON)
	case "discard", "reject":
		id, err := needID()
		if err != nil {
			return err
		}
		if *reason == "" {
			return usageErr("%s %s: --reason is required", fc.name, sub)
		}
		res, err := ops.Discard(ctx, id, *operator, *reason, *dry)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		return printAction(stdout, res, *asJSON)
	case "redrive":
		counts := map[string]int{}
		_, err := ops.Redrive(ctx, ingest.RedriveOptions{Filter: filter, Rate: *rate, Limit: *limit, Force: *force, Operator: *operator, DryRun: *dry,
			Progress: func(d ingest.RedriveDecision) {
				counts[d.Action]++
				if *asJSON {
					enc.Encode(map[string]any{"id": d.Failure.ID, "object_id": d.Failure.ObjectID, "action": d.Action, "detail": d.Detail, "dry_run": *dry})
				} else {
					fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\n", d.Failure.ID, d.Failure.ObjectID, d.Action, d.Detail)
				}
			}})
		if !*asJSON {
			prefix := ""
			if *dry {
				prefix = "dry run, nothing changed; would have: "
			}
			fmt.Fprintf(stdout, "%sredriven %d, held at the ceiling %d, unchanged %d, errors %d\n", prefix, counts["redriven"], counts["held"], counts["unchanged"], counts["error"])
		}
		return err
	case "reconcile":
		ds, err := ops.ReconcileQuarantine(ctx, *dry)
		replayed := 0
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		for _, d := range ds {
			if d.Action == "replayed" {
				replayed++
			}
			if *asJSON {
				enc.Encode(map[string]any{"id": d.Parked.Held.EventID, "task_id": d.Parked.TaskID, "object_id": d.Parked.Held.Envelope.ObjectID,
					"code": d.Parked.Held.Code, "action": d.Action, "detail": d.Detail, "dry_run": *dry})
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Parked.Held.EventID, d.Parked.Held.Envelope.ObjectID, d.Parked.Held.Code, d.Action, d.Detail)
		}
		tw.Flush()
		if !*asJSON {
			if *dry {
				fmt.Fprintf(stdout, "dry run, nothing changed: %d parked, %d would be replayed\n", len(ds), replayed)
			} else {
				fmt.Fprintf(stdout, "%d parked, %d replayed\n", len(ds), replayed)
			}
		}
		return err
	}
	return nil
}

// printAction says what an operator action did, or with --dry-run would do.
func printAction(stdout io.Writer, res *ingest.ActionResult, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	switch {
	case res.DryRun:
		fmt.Fprintf(stdout, "dry run: %s of %s (failure %s) would do, and nothing was written:\n", res.Action, res.Failure.ObjectID, res.Failure.ID)
		for i, s := range res.Steps {
			fmt.Fprintf(stdout, "  %d. %s\n", i+1, s)
		}
		return nil
	case res.Already:
		fmt.Fprintf(stdout, "%s of %s was already recorded (event %s by %s); its broker step is done now\n", res.Action, res.Failure.ObjectID, res.Event.ID, res.Event.Operator)
	case res.Action == "replay":
		fmt.Fprintf(stdout, "replayed %s as task %s (attempt %d, replay of %s; event %s)\n", res.Failure.ObjectID, res.TaskID, res.Replay.Attempt, res.Replay.ReplayOf, res.Event.ID)
	default:
		fmt.Fprintf(stdout, "discarded %s (event %s, operator %s)\n", res.Failure.ObjectID, res.Event.ID, res.Event.Operator)
	}
	return nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// runBatch serves `lazaret batch status ID`.
func runBatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "status" {
		return usageErr("batch: want: batch status ID")
	}
	fs := flag.NewFlagSet("batch status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "one JSON object per line")
	cfg := defaultConfig()
	if err := cfg.bind(fs, args[1:], "ledger"); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("batch status: want exactly one batch ID")
	}
	l, err := cfg.openExistingLedger(ctx)
	if err != nil {
		return err
	}
	defer l.Close()
	items, err := ingest.BatchStatus(ctx, l, fs.Arg(0))
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return &exitError{code: 1, err: fmt.Errorf("batch %s: nothing in the ledger", fs.Arg(0))}
	}
	counts := map[premis.Destination]int{}
	enc := json.NewEncoder(stdout)
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "OBJECT\tKIND\tDESTINATION\tCLASS\tCODE\tATTEMPT\tEVENT")
	}
	for _, it := range items {
		counts[it.Destination]++
		if *asJSON {
			enc.Encode(it)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", it.ObjectID, it.Kind, it.Destination, dash(string(it.Class)), dash(it.Code), it.Attempt, it.EventID)
	}
	tw.Flush()
	if !*asJSON {
		fmt.Fprintf(stdout, "%d items: %d accepted, %d retrying, %d dead-letter, %d quarantine, %d audit-hold, %d replayed, %d discarded\n", len(items),
			counts[premis.Accepted], counts[premis.Retry], counts[premis.DeadLetter], counts[premis.Quarantined], counts[premis.AuditHold], counts[premis.Replayed], counts[premis.Discarded])
	}
	return nil
}

// runReconcileBroker serves `lazaret reconcile-broker`: archived tasks with
// no ledger event are recorded; items the ledger expects in the broker but
// the broker lost are enqueued or parked again; dead letters the broker no
// longer holds are reported (they stay listable and replayable).
func runReconcileBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reconcile-broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dry := fs.Bool("dry-run", false, "say what would be repaired, change nothing")
	asJSON := fs.Bool("json", false, "the report as one JSON object")
	cfg := defaultConfig()
	if err := cfg.bind(fs, args, "redis", "ledger", "policy"); err != nil {
		return err
	}
	opt, ledger, err := cfg.connectExisting(ctx)
	if err != nil {
		return err
	}
	defer ledger.Close()
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	client := asynq.NewClient(opt)
	defer client.Close()
	w := cfg.worker(ledger, client, cfg.logger(stderr))
	rep, err := cfg.operator(w, client, insp, opt).ReconcileBroker(ctx, *dry)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	for _, id := range rep.Missing {
		fmt.Fprintf(stdout, "%s\tnot in the broker: replayable from the ledger\n", id)
	}
	for _, id := range rep.Reenqueued {
		fmt.Fprintf(stdout, "%s\tsubmitted or replayed, but lost by the broker: enqueued again\n", id)
	}
	for _, id := range rep.Reparked {
		fmt.Fprintf(stdout, "%s\tparked copy lost by the broker: parked again\n", id)
	}
	for _, id := range rep.Rearchived {
		fmt.Fprintf(stdout, "%s\tdead letter lost by the broker: archived again\n", id)
	}
	prefix := ""
	if *dry {
		prefix = "dry run, nothing changed: "
	}
	fmt.Fprintf(stdout, "%s%d archived task(s) recorded in the ledger; %d item(s) enqueued again; %d parked again; %d archived again; %d stale parked copies removed; %d open failure(s) no longer in the broker\n",
		prefix, len(rep.ArchivedRecorded), len(rep.Reenqueued), len(rep.Reparked), len(rep.Rearchived), len(rep.StaleParked), len(rep.Missing))
	return nil
}
