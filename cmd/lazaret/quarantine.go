package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hibiken/asynq"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// failureCommand describes lazaret dlq|quarantine|hold.
type failureCommand struct {
	name        string
	destination premis.Destination
	short, long string
	subcommands []string
}

var failureCommands = map[string]failureCommand{
	"dlq": {"dlq", premis.DeadLetter, "dead letters: items that failed for good (asynq's archived set)",
		"Dead letters are items that failed in a way retrying cannot fix (corrupt or\nunsupported files, bad fixity) or that exhausted their retries.",
		[]string{"ls", "show", "replay", "redrive", "discard"}},
	"quarantine": {"quarantine", premis.Quarantined, "items parked for reconciliation (registries, unknown failures)",
		"Quarantined items failed against a registry (UN/LOCODE, HS) or in a way\nLazaret does not recognise; a registry change re-checks them.",
		[]string{"ls", "show", "replay", "discard", "reconcile"}},
	"hold": {"hold", premis.AuditHold, "audit-hold: items a person must decide on",
		"Items on audit-hold reached the poison cap or need a person's decision:\nrelease replays them, reject discards them.",
		[]string{"ls", "show", "release", "reject"}},
}

// failureUsage is the help of one dlq|quarantine|hold subcommand.
type failureUsage struct{ use, short, long, example, args string }

func failureHelp(fc failureCommand, sub string) failureUsage {
	n, where := fc.name, map[string]string{"dlq": "dead letters", "quarantine": "quarantined items", "hold": "items on audit-hold"}[fc.name]
	idArg := "  ID  a failure's event id, its object id, or its correlation id (from " + n + " ls)"
	switch sub {
	case "ls":
		return failureUsage{"ls [flags]", "list open " + where + ", oldest first",
			"List the open " + where + " (each item's latest outcome), oldest first, with\nclass, code and position.",
			"  lazaret " + n + " ls\n  lazaret " + n + " ls --class structural --since 24h\n  lazaret " + n + " ls --batch batch-17 --json", ""}
	case "show":
		return failureUsage{"show [flags] ID", "one failure: position, message, broker state and history",
			"Show one failure (class, code, position, message), where the broker holds it,\nand its item's whole history.",
			"  lazaret " + n + " show scan-0001\n  lazaret " + n + " show 0b5c0e0e-3c1d-4f57-a0d6-9d1c8b0a7e11 --json", idArg}
	case "replay", "release":
		return failureUsage{sub + " [flags] ID | --all [filters]", "enqueue the item again (optionally corrected), or every item a filter selects",
			"Record an unq event naming you, then enqueue the item as a new attempt (with\n--file: the corrected file, its digest taken now; with --set: manifest fields\ncorrected, checked by the manifest's rules). With --all, every open failure\nthe filters select, --rate a second; --dry-run lists them.",
			"  lazaret " + n + " " + sub + " scan-0001 --reason \"rescanned\" --file /srv/ingest/fix/scan-0001.tif\n  lazaret " + n + " " + sub + " scan-0001 --set color_profile=\"sRGB IEC61966-2.1\"\n  lazaret " + n + " " + sub + " --all --code manifest.color_profile.required --batch batch-17 --set color_profile=sRGB --dry-run", idArg}
	case "discard", "reject":
		return failureUsage{sub + " [flags] ID --reason TEXT | --all [filters] --reason TEXT", "settle the item (or every item a filter selects) as discarded, with a reason",
			"Record that the item will not be ingested (a PREMIS event with you and the\nreason), and remove its task from the broker. With --all, every open failure\nthe filters select, --rate a second; --dry-run lists them.",
			"  lazaret " + n + " " + sub + " scan-0001 --reason \"duplicate of scan-0002\"\n  lazaret " + n + " " + sub + " --all --batch batch-17 --code edifact.locode.unknown --reason \"partner resends\" --dry-run", idArg}
	case "redrive":
		return failureUsage{"redrive [flags]", "replay dead letters by filter, throttled, after a fix",
			"Replay the dead letters that match the filters, --rate per second. Each is\nre-checked first and left alone if it still fails the same way (--force\nreplays anyway); one whose next attempt reaches the poison cap goes to\naudit-hold instead.",
			"  lazaret dlq redrive --code io.permission --dry-run\n  lazaret dlq redrive --class transient --since 2h --rate 5", ""}
	case "reconcile":
		return failureUsage{"reconcile [flags]", "re-check quarantined items against the registries in force",
			"Reload the registries (--locode, --hs: give the workers' files) and\nre-check every quarantined item whose failure depended on a registry version\nthat has changed; replay those that now pass.",
			"  lazaret quarantine reconcile --locode /srv/registries/unlocode.csv --dry-run", ""}
	}
	return failureUsage{use: sub}
}

// commandFor is the command that acts on failures at d.
func commandFor(d premis.Destination) string {
	for _, fc := range failureCommands {
		if fc.destination == d {
			return fc.name
		}
	}
	return "dlq"
}

// verbFor is sub as the queue of d names it: audit-hold releases and
// rejects what the other queues replay and discard.
func verbFor(d premis.Destination, sub string) string {
	held := map[string]string{"replay": "release", "discard": "reject"}
	if d == premis.AuditHold {
		if v, ok := held[sub]; ok {
			return v
		}
		return sub
	}
	for v, h := range held {
		if sub == h {
			return v
		}
	}
	return sub
}

func defaultOperator() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}

// failureFlags are the filters of ls and redrive.
type failureFlags struct {
	class, code, kind, batch string
	since, until             timeFlag
	limit                    int
}

func (f *failureFlags) declare(fs *pflag.FlagSet) {
	fs.StringVar(&f.class, "class", "", "only this `CLASS` ("+strings.Join(classNames(), ", ")+")")
	fs.StringVar(&f.code, "code", "", "only this failure `CODE` (e.g. tiff.ifd-loop)")
	fs.StringVar(&f.kind, "kind", "", "only this `KIND`: tiff or edifact")
	fs.StringVar(&f.batch, "batch", "", "only this batch `ID`")
	fs.Var(&f.since, "since", "only failures at or after `TIME`: RFC 3339, a date, or a duration back from now (24h, 7d)")
	fs.Var(&f.until, "until", "only failures before `TIME` (same forms as --since)")
	fs.IntVar(&f.limit, "limit", 0, "at most `N` (0: all)")
}

func (f *failureFlags) filter(dst premis.Destination) (ingest.FailureFilter, error) {
	if f.class != "" && !premis.Class(f.class).Valid() {
		return ingest.FailureFilter{}, usageErr("--class %q: want one of %s", f.class, strings.Join(classNames(), ", "))
	}
	return ingest.FailureFilter{Class: premis.Class(f.class), Code: f.code, Kind: f.kind, BatchID: f.batch, Destination: dst,
		Since: f.since.t, Until: f.until.t, Limit: f.limit}, nil
}

func classNames() []string {
	var out []string
	for _, c := range premis.Classes() {
		out = append(out, string(c))
	}
	return out
}

// declareFailure declares one lazaret dlq|quarantine|hold subcommand.
func declareFailure(fc failureCommand, sub string) declaration {
	return func(fs *pflag.FlagSet, defaults *Config) ([]string, action) {
		asJSON := fs.Bool("json", false, "JSON: one object per line for a listing, one object otherwise")
		var filters failureFlags
		var operator, reason, file string
		var rate float64
		var force, dry, all, everyItem bool
		var fleetWait time.Duration
		var sets listFlag
		actor := func() {
			fs.StringVar(&operator, "operator", "", "who acts, recorded in the PREMIS event (default: your login name)")
			fs.StringVar(&reason, "reason", "", "why, recorded in the PREMIS event")
			fs.BoolVar(&dry, "dry-run", false, "say what would happen; change nothing")
		}
		fields := []string{"redis", "ledger"}
		switch sub {
		case "ls":
			filters.declare(fs)
			fields = append(fields, "checkpoint")
		case "replay", "release":
			actor()
			fs.StringVar(&file, "file", "", "replay with this corrected `FILE` (beneath an --ingest-root, or beside the original)")
			fs.Var(&sets, "set", "correct a manifest field, `FIELD=VALUE` (repeatable; e.g. color_profile=sRGB), checked by the manifest's rules")
			bulk(fs, &filters, &all, &rate)
			fields = append(fields, "policy", "roots", "links")
		case "discard", "reject":
			actor()
			bulk(fs, &filters, &all, &rate)
		case "redrive":
			filters.declare(fs)
			actor()
			fs.Float64Var(&rate, "rate", 10, "items per second")
			fs.BoolVar(&force, "force", false, "replay even items whose re-check fails the same way")
			fields = append(fields, "policy", "master", "edi")
		case "reconcile":
			fs.BoolVar(&dry, "dry-run", false, "say what would be replayed; change nothing")
			fs.StringVar(&filters.batch, "batch", "", "only this batch `ID`")
			fs.StringVar(&filters.code, "code", "", "only items parked with this `CODE` (e.g. edifact.locode.unknown)")
			fs.DurationVar(&fleetWait, "wait", 0, "while live workers validate with other registry versions, wait up to `DURATION` for them (0: refuse at once)")
			fs.BoolVar(&everyItem, "every-item", false, "list every parked item, also those the registry change does not concern")
			fields = append(fields, "policy", "master", "edi")
		}
		// One action, printed for a person: the log says only what went wrong
		// (a flag, LAZARET_LOG_LEVEL or the file still choose another level).
		defaults.LogLevel = "warn"
		return fields, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
			if operator == "" {
				operator = defaultOperator()
			}
			needID := func() (string, error) {
				if len(args) != 1 {
					return "", usageErr("%s %s: want exactly one ID (an event, object or correlation id from %s ls)", fc.name, sub, fc.name)
				}
				return args[0], nil
			}
			if sub == "ls" {
				if len(args) > 0 {
					return usageErr("%s ls: unexpected arguments %q (filters are flags: --class, --code, --batch...)", fc.name, args)
				}
				filter, err := filters.filter(fc.destination)
				if err != nil {
					return err
				}
				ledger, err := cfg.openReadOnly(ctx)
				if err != nil {
					return err
				}
				defer ledger.Close()
				if err := warnUnverified(ctx, cfg, ledger, stderr); err != nil {
					return err
				}
				list, err := ingest.Failures(ctx, ledger, filter)
				if err != nil {
					return err
				}
				if err := printFailures(stdout, list, *asJSON); err != nil {
					return err
				}
				if len(list) == 0 && !*asJSON {
					fmt.Fprintf(stdout, "(nothing in %s matches)\n", fc.destination)
				}
				return nil
			}
			set := map[string]string{}
			for _, kv := range sets {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageErr("%s %s: --set %q: want FIELD=VALUE", fc.name, sub, kv)
				}
				set[k] = v
			}
			var id string
			switch {
			case all:
				if len(args) > 0 {
					return usageErr("%s %s --all: no ID (the filters select: --class, --code, --batch...)", fc.name, sub)
				}
				if file != "" {
					return usageErr("%s %s --all: --file corrects one item; give its ID", fc.name, sub)
				}
			case sub != "redrive" && sub != "reconcile":
				var err error
				if id, err = needID(); err != nil {
					return err
				}
			}
			if (sub == "discard" || sub == "reject") && reason == "" {
				return usageErr("%s %s: --reason is required (it is recorded in the PREMIS event)", fc.name, sub)
			}
			var (
				opt    asynq.RedisConnOpt
				ledger premis.Ledger
				err    error
			)
			if sub == "show" {
				if opt, err = cfg.redis(); err == nil {
					ledger, err = cfg.openReadOnly(ctx)
				}
			} else {
				opt, ledger, err = cfg.connectExisting(ctx)
			}
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
			if id != "" && sub != "show" {
				// Actions take the same ids as show, and act only on a failure
				// that is where the command says: dlq discard does not discard a
				// quarantined item by its object id.
				if f, history, ferr := api.FindFailure(ctx, ledger, id); history != nil {
					if ferr == nil && f.Destination != fc.destination {
						return &exitError{code: 1, err: fmt.Errorf("%s %s: %s's open failure (%s) is in %s, not %s: use lazaret %s %s", fc.name, sub, f.ObjectID, f.ID,
							f.Destination, fc.destination, commandFor(f.Destination), verbFor(f.Destination, sub))}
					}
					id = f.ID
				}
			}
			if all {
				filter, err := filters.filter(fc.destination)
				if err != nil {
					return err
				}
				action := "replay"
				if sub == "discard" || sub == "reject" {
					action = "discard"
				}
				counts := map[string]int{}
				_, err = ops.Bulk(ctx, ingest.BulkOptions{Filter: filter, Action: action, Operator: operator, Reason: reason, Set: set,
					Rate: rate, Limit: filter.Limit, DryRun: dry, Progress: func(d ingest.BulkDecision) {
						counts[d.Action]++
						if *asJSON {
							api.EncodeJSON(stdout, redriveLine{d.Failure.ID, d.Failure.ObjectID, d.Action, d.Detail, dry})
						} else {
							fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\n", d.Failure.ID, cell(d.Failure.ObjectID), d.Action, cell(d.Detail))
						}
					}})
				if !*asJSON {
					prefix := ""
					if dry {
						prefix = "dry run, nothing changed; would have: "
					}
					fmt.Fprintf(stdout, "%s%s %d, errors %d\n", prefix, action, counts[action], counts["error"])
				}
				if err == nil && counts["error"] > 0 {
					err = &exitError{code: 1, err: fmt.Errorf("%s %s --all: %d of %d failed", fc.name, sub, counts["error"], counts[action]+counts["error"])}
				}
				return err
			}
			switch sub {
			case "show":
				f, history, ferr := api.FindFailure(ctx, ledger, id)
				if history == nil {
					return &exitError{code: 1, err: ferr}
				}
				d := api.Detail(ops, f, history, ferr)
				if *asJSON {
					return api.EncodeJSON(stdout, d)
				}
				return printDetail(stdout, d)
			case "replay", "release":
				res, err := ops.Replay(ctx, id, ingest.ReplayOptions{Operator: operator, Reason: reason, File: file, Set: set, DryRun: dry})
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				return printAction(stdout, res, *asJSON)
			case "discard", "reject":
				res, err := ops.Discard(ctx, id, operator, reason, dry)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				return printAction(stdout, res, *asJSON)
			case "redrive":
				filter, err := filters.filter(premis.DeadLetter)
				if err != nil {
					return err
				}
				counts := map[string]int{}
				_, err = ops.Redrive(ctx, ingest.RedriveOptions{Filter: filter, Rate: rate, Limit: filter.Limit, Force: force, Operator: operator, DryRun: dry,
					Progress: func(d ingest.RedriveDecision) {
						counts[d.Action]++
						if *asJSON {
							api.EncodeJSON(stdout, redriveLine{d.Failure.ID, d.Failure.ObjectID, d.Action, d.Detail, dry})
						} else {
							fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\n", d.Failure.ID, d.Failure.ObjectID, d.Action, cell(d.Detail))
						}
					}})
				if !*asJSON {
					prefix := ""
					if dry {
						prefix = "dry run, nothing changed; would have: "
					}
					fmt.Fprintf(stdout, "%sredriven %d, held at the ceiling %d, unchanged %d, errors %d\n", prefix, counts["redriven"], counts["held"], counts["unchanged"], counts["error"])
				}
				return err
			case "reconcile":
				ropt := ingest.ReconcileOptions{DryRun: dry, BatchID: filters.batch, Code: filters.code}
				ds, err := ops.ReconcileQuarantine(ctx, ropt)
				for deadline := time.Now().Add(fleetWait); fleetWait > 0 && errors.As(err, new(*ingest.FleetBehindError)) && time.Now().Before(deadline); {
					fmt.Fprintf(stderr, "waiting for the workers' registries: %v\n", err)
					select {
					case <-ctx.Done():
						return context.Cause(ctx)
					case <-time.After(2 * time.Second):
					}
					ds, err = ops.ReconcileQuarantine(ctx, ropt)
				}
				replayed, untouched := 0, 0
				tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
				for _, d := range ds {
					if d.Action == "replayed" || d.Action == "would-replay" {
						replayed++
					}
					if *asJSON {
						api.EncodeJSON(stdout, reconcileLine{d.Parked.Held.EventID, d.Parked.TaskID, d.Parked.Held.Envelope.ObjectID,
							d.Parked.Held.Code, d.Action, d.Detail, dry})
						continue
					}
					if !everyItem && (d.Action == "unchanged-registry" || d.Action == "not-registry-dependent") {
						untouched++
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Parked.Held.EventID, cell(d.Parked.Held.Envelope.ObjectID), d.Parked.Held.Code, d.Action, cell(d.Detail))
				}
				tw.Flush()
				if !*asJSON {
					rest := ""
					if untouched > 0 {
						rest = fmt.Sprintf(" (%d the registry change does not concern, not listed: --every-item)", untouched)
					}
					if dry {
						fmt.Fprintf(stdout, "dry run, nothing changed: %d parked, %d would be replayed%s\n", len(ds), replayed, rest)
					} else {
						fmt.Fprintf(stdout, "%d parked, %d replayed%s\n", len(ds), replayed, rest)
					}
				}
				return err
			}
			return nil
		}
	}
}

// bulk declares the flags of an action over every failure a filter
// selects (--all).
func bulk(fs *pflag.FlagSet, filters *failureFlags, all *bool, rate *float64) {
	filters.declare(fs)
	fs.BoolVar(all, "all", false, "act on every failure the filters select (--class, --code, --kind, --batch, --since, --until, --limit) instead of one ID")
	fs.Float64Var(rate, "rate", 10, "with --all: at most `N` actions a second")
}

// redriveLine is one line of dlq redrive --json (and of an --all action).
type redriveLine struct {
	ID       string `json:"id"`
	ObjectID string `json:"object_id"`
	Action   string `json:"action"` // redriven, held, unchanged, error
	Detail   string `json:"detail"`
	DryRun   bool   `json:"dry_run"`
}

// reconcileLine is one line of quarantine reconcile --json.
type reconcileLine struct {
	ID       string `json:"id"`
	TaskID   string `json:"task_id"`
	ObjectID string `json:"object_id"`
	Code     string `json:"code"`
	Action   string `json:"action"` // replayed, still-failing, unchanged-registry, not-registry-dependent
	Detail   string `json:"detail"`
	DryRun   bool   `json:"dry_run"`
}

// printFailures lists failures: a table, or one ingest.Failure per line.
func printFailures(stdout io.Writer, list []ingest.Failure, asJSON bool) error {
	if asJSON {
		for _, f := range list {
			if err := api.EncodeJSON(stdout, f); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOBJECT\tKIND\tCLASS\tCODE\tWHERE\tOFFSET\tATTEMPT\tAT\tMESSAGE")
	for _, f := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", f.ID, cell(f.ObjectID), f.Kind, f.Class, cell(f.Code), position(f.Position),
			int64OrDash(f.Offset), f.Attempt, f.DateTime.Format(time.RFC3339), cell(truncate(f.Message, 80)))
	}
	return tw.Flush()
}

// printDetail is show's text form.
func printDetail(stdout io.Writer, d api.FailureDetail) error {
	f := d.Failure
	fmt.Fprintf(stdout, "failure %s\n  object   %s (batch %s, %s)\n  class    %s\n  code     %s\n  where    %s, byte offset %s\n  message  %s\n  broker   %s\n",
		f.ID, f.ObjectID, dash(f.BatchID), f.Kind, f.Class, f.Code, position(f.Position), int64OrDash(f.Offset), indent(f.Message, "           "), d.Broker)
	fx := d.Fixity
	computed := digestText(fx.ComputedSHA256, fx.ComputedSize)
	if computed == "-" {
		computed = "- (no fixity check of the bytes passed: never read, or not as declared)"
	}
	fmt.Fprintf(stdout, "  declared %s\n  computed %s\n", digestText(fx.DeclaredSHA256, fx.DeclaredSize), computed)
	if d.Status != "" {
		fmt.Fprintf(stdout, "  status   %s\n", d.Status)
	}
	if h := d.Help; h != nil {
		fmt.Fprintf(stdout, "  meaning  %s\n  cause    %s\n  to do    %s\n  see      %s\n", h.Meaning, h.Cause, h.Action, h.Doc)
	}
	fmt.Fprintln(stdout, "history:")
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	for _, e := range d.History {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\tattempt %d\t%s\t%s\n", e.DateTime.Format(time.RFC3339), e.Type, e.Outcome, dash(string(e.Destination)),
			dash(e.Code), e.Attempt, dash(e.Operator), cell(e.Note))
	}
	return tw.Flush()
}

// digestText is a digest and size as show prints them ("-" for none).
func digestText(sha string, size int64) string {
	switch {
	case sha == "":
		return "-"
	case size > 0:
		return fmt.Sprintf("sha256 %s, %d bytes", sha, size)
	}
	return "sha256 " + sha
}

// printAction says what an operator action did, or with --dry-run would do.
func printAction(stdout io.Writer, res *ingest.ActionResult, asJSON bool) error {
	if asJSON {
		return api.EncodeJSON(stdout, api.NewAction(res))
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

// declareBatch declares lazaret batch status|watch ID.
func declareBatch(sub string) declaration {
	return func(fs *pflag.FlagSet, _ *Config) ([]string, action) {
		var asJSON *bool
		var timeout *time.Duration
		if sub == "status" {
			asJSON = fs.Bool("json", false, "one JSON object: batch_id, items, counts, progress (what GET /v1/batches/{id} serves)")
		} else {
			timeout = fs.Duration("timeout", 0, "give up after `DURATION` (0: never)")
			asJSON = fs.Bool("json", false, "one JSON object of the batch's progress a line, whenever it changes, the last when it is finished")
		}
		return []string{"ledger", "checkpoint"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
			if len(args) != 1 {
				return usageErr("batch %s: want exactly one batch ID", sub)
			}
			l, err := cfg.openReadOnly(ctx)
			if err != nil {
				return err
			}
			defer l.Close()
			if err := warnUnverified(ctx, cfg, l, stderr); err != nil {
				return err
			}
			if sub == "watch" {
				if _, err := ingest.BatchProgress(ctx, l, args[0]); err != nil {
					return &exitError{code: 1, err: err}
				}
				if *asJSON {
					p, err := watchJSON(ctx, l, args[0], stdout, 500*time.Millisecond, *timeout)
					if err != nil {
						return &exitError{code: 1, err: err}
					}
					return waitVerdict(p)
				}
				p, err := watchBatch(ctx, l, args[0], stdout, 500*time.Millisecond, *timeout)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				fmt.Fprintln(stdout, progressLine(p))
				return waitVerdict(p)
			}
			items, progress, err := ingest.BatchReport(ctx, l, args[0])
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			b := api.NewBatchStatus(args[0], items)
			b.Progress = progress
			if *asJSON {
				return api.EncodeJSON(stdout, b)
			}
			tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "OBJECT\tKIND\tDESTINATION\tCLASS\tCODE\tATTEMPT\tEVENT")
			for _, it := range items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", cell(it.ObjectID), it.Kind, it.Destination, dash(string(it.Class)), dash(cell(it.Code)), it.Attempt, it.EventID)
			}
			tw.Flush()
			c := b.Counts
			fmt.Fprintf(stdout, "%d items: %d accepted, %d retrying, %d dead-letter, %d quarantine, %d audit-hold, %d replayed, %d discarded, %d submitted and not yet processed\n", len(items),
				c.Accepted, c.Retrying, c.DeadLetter, c.Quarantine, c.AuditHold, c.Replayed, c.Discarded, c.Submitted)
			fmt.Fprintln(stdout, progressLine(progress))
			return nil
		}
	}
}

// declareReconcileBroker declares `lazaret reconcile-broker`: archived tasks
// with no ledger event are recorded; items the ledger expects in the broker
// but the broker lost are enqueued or parked again; dead letters the broker
// no longer holds are reported (they stay listable and replayable).
func declareReconcileBroker(fs *pflag.FlagSet, defaults *Config) ([]string, action) {
	dry := fs.Bool("dry-run", false, "say what would be repaired, change nothing")
	asJSON := fs.Bool("json", false, "the report as one JSON object")
	// One action, printed for a person: the log says only what went wrong
	// (a flag, LAZARET_LOG_LEVEL or the file still choose another level).
	defaults.LogLevel = "warn"
	return []string{"redis", "ledger", "policy"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
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
			return api.EncodeJSON(stdout, rep)
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
		for _, u := range rep.Unexpected {
			fmt.Fprintf(stdout, "%s\tin the ingest queue, but the ledger does not expect it: reported, left as it is\n", u)
		}
		for _, id := range rep.LedgerBehind {
			fmt.Fprintf(stdout, "%s\tthe broker completed it, but the ledger lost its outcome (restored from a backup, or a lagging replica promoted): run again\n", id)
		}
		prefix := ""
		if *dry {
			prefix = "dry run, nothing changed: "
		}
		fmt.Fprintf(stdout, "%s%d archived task(s) recorded in the ledger; %d item(s) enqueued again; %d parked again; %d archived again; %d stale parked copies removed; %d open failure(s) no longer in the broker\n",
			prefix, len(rep.ArchivedRecorded), len(rep.Reenqueued), len(rep.Reparked), len(rep.Rearchived), len(rep.StaleParked), len(rep.Missing))
		return nil
	}
}
