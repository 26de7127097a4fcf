package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// A command is declared when the tree is built and run once cobra has
// parsed its flags. Its declaration puts its own flags on fs, bound to the
// variables its action reads, may adjust c (the defaults of its settings,
// which help shows), and returns the settings fields it reads ("redis",
// "ledger", "checkpoint", ...: see Config.declareSettings) and its action.
// Nothing of the command runs at declaration.
type declaration func(fs *pflag.FlagSet, c *Config) (settings []string, run action)

// action does a command's work, with cfg loaded (defaults, file,
// environment, flags) and args the positional arguments.
type action func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error

// exitStatus is the same for every command.
const exitStatus = `Exit status:
  0  done; nothing failed
  1  a failure was found (an item that does not pass, a ledger that is not
     intact) or the operation failed
  2  usage: an unknown command or flag, a missing argument, a bad setting`

// Annotations a command's help shows.
const (
	argsAnnotation = "lazaret_args" // the Arguments: section
	exitAnnotation = "lazaret_exit" // what exit status 1 means for this command
)

// leaf describes one runnable command.
type leaf struct {
	use, short, long, example string
	// args explains the positional arguments, one "NAME  meaning" a line.
	args string
	// exit says what exit status 1 means here, when more than a failure.
	exit string
	// declare declares the command's flags and returns its action.
	declare declaration
	// files: positional arguments are files (shell completion offers them).
	files bool
	// ids, when set, offers the first positional argument: the open
	// failures of a queue (failureIDs).
	ids func(cmd *cobra.Command, toComplete string) []cobra.Completion
}

const settingAnnotation = "lazaret_setting"

// command builds the cobra command of l: its declaration's flags and the
// setting flags of the fields it names go on the command's flag set, for
// cobra to parse, show in help and complete. When it runs, Config.load
// layers the file, the environment and the setting flags given over the
// defaults, and the action gets the result.
func (l leaf) command() *cobra.Command {
	own := pflag.NewFlagSet(l.use, pflag.ContinueOnError)
	base := defaultConfig()
	fields, run := l.declare(own, &base)
	settings := pflag.NewFlagSet(l.use, pflag.ContinueOnError)
	parsed := base // what cobra parses the setting flags into; load reads what was given
	parsed.declareSettings(settings, fields)
	cmd := &cobra.Command{
		Use: l.use, Short: l.short, Long: l.long, Example: l.example,
		Annotations: map[string]string{argsAnnotation: l.args, exitAnnotation: l.exit},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := base
			err := cfg.load(cmd.Flags(), fields)
			if err == nil {
				err = run(cmd.Context(), &cfg, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			var ee *exitError
			if err != nil && !errors.As(err, &ee) {
				err = &exitError{code: 1, err: err}
			}
			if errors.As(err, &ee) {
				ee.cmd = cmd
			}
			return err
		},
	}
	add := func(fs *pflag.FlagSet, setting bool) {
		fs.VisitAll(func(pf *pflag.Flag) {
			if setting {
				pf.Value = &recorded{Value: pf.Value}
				pf.Annotations = map[string][]string{settingAnnotation: {"true"}}
			}
			// The back-quoted word of a usage names the value (--ledger
			// LEDGER); help shows it, completion shows the usage without it.
			if name, usage := pflag.UnquoteUsage(pf); name != "" && strings.Contains(pf.Usage, "`") {
				pf.Value, pf.Usage = namedValue{pf.Value, name}, usage
			}
			cmd.Flags().AddFlag(pf)
		})
	}
	add(own, false)
	add(settings, true)
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if strings.HasPrefix(toComplete, "-") {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if l.ids != nil && len(args) == 0 {
			return l.ids(cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		if l.files {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	for name, values := range flagValues() {
		if cmd.Flags().Lookup(name) == nil {
			continue
		}
		cmd.RegisterFlagCompletionFunc(name, func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			for _, v := range values() {
				if strings.HasPrefix(v, toComplete) {
					out = append(out, v)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		})
	}
	return cmd
}

// namedValue is a flag value whose type, in help, is the name its usage gave.
type namedValue struct {
	pflag.Value
	name string
}

func (v namedValue) Type() string { return v.name }

// group is a command that only holds others (dlq, events, ...).
func group(use, short, long string, children ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: cobra.ArbitraryArgs, SuggestionsMinimumDistance: 2,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				cmd.SetOut(cmd.ErrOrStderr())
				cmd.Help()
				return &exitError{code: 2, cmd: cmd}
			}
			return unknownCommand(cmd, args[0])
		}}
	cmd.AddCommand(children...)
	return cmd
}

func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return &exitError{code: 2, err: errors.New(msg), cmd: cmd}
}

// newRoot builds the command tree.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:         "lazaret",
		Short:       "failure-handling ingest for TIFF masters and UN/EDIFACT interchanges",
		Annotations: map[string]string{exitAnnotation: ""},
		Long: `lazaret validates TIFF preservation masters and UN/EDIFACT interchanges on
asynq workers, classifies every failure, records PREMIS events in a
hash-chained ledger and routes each item to exactly one place: accepted,
retried, dead-letter (dlq), quarantine or audit-hold.

Settings come from defaults, then a JSON file (--config or LAZARET_CONFIG),
then LAZARET_* environment variables (LAZARET_REDIS_URL, LAZARET_LEDGER,
LAZARET_LOG_LEVEL), then flags: a flag wins. The ledger defaults to
$XDG_DATA_HOME/lazaret/ledger.db (~/.local/share/lazaret/ledger.db).`,
		Version:       version,
		Args:          nil, // unknown commands get "did you mean"
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			cmd.Help()
			return &exitError{code: 2, cmd: cmd}
		},
	}
	root.SetVersionTemplate("lazaret {{.Version}}\n")
	root.SetUsageTemplate(usageTemplate)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: 2, err: suggestFlag(cmd.Flags(), err), cmd: cmd}
	})
	root.CompletionOptions.HiddenDefaultCmd = false
	root.AddGroup(
		&cobra.Group{ID: "ingest", Title: "Ingest:"},
		&cobra.Group{ID: "failures", Title: "Failures (each action is a PREMIS event naming who did it):"},
		&cobra.Group{ID: "records", Title: "Ledger and reports:"},
	)
	root.SetHelpCommand(&cobra.Command{Use: "help [COMMAND...]", Short: "a command's arguments, flags and examples",
		Long: "Print the help of a command: lazaret help dlq replay is lazaret dlq replay --help.",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil {
				return &exitError{code: 2, err: err, cmd: c.Root()}
			}
			if len(rest) > 0 {
				return unknownCommand(cmd, rest[0])
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		}})
	root.SetHelpCommandGroupID("")
	add := func(groupID string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = groupID
			root.AddCommand(c)
		}
	}
	add("ingest", commandInspect(), commandSubmit(), commandWorker(), commandServe(), commandDemo())
	add("failures", failureGroup(failureCommands["dlq"]), failureGroup(failureCommands["quarantine"]),
		failureGroup(failureCommands["hold"]), commandReconcileBroker())
	add("records", commandBatch(), commandEvents(), commandLedger(), commandStats(), commandContrl(), commandAperak())
	add("", commandBench(), commandVersion())
	return root
}

const usageTemplate = `Usage:{{if not .HasAvailableSubCommands}}
  {{.UseLine}}{{else}}
  {{.CommandPath}} COMMAND [flags] [ARGUMENTS]{{end}}{{with index .Annotations "lazaret_args"}}

Arguments:
{{.}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{if eq (len .Groups) 0}}

Commands:{{range $cmds}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{else}}{{range $group := .Groups}}

{{.Title}}{{range $cmds}}{{if (and (eq .GroupID $group.ID) (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if not .AllChildCommandsHaveGroup}}

Other:{{range $cmds}}{{if (and (eq .GroupID "") (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{end}}{{end}}{{if ownFlags .}}

Flags:
{{ownFlags .}}{{end}}{{if settingFlags .}}

Settings (also from --config FILE and LAZARET_* variables; a flag wins):
{{settingFlags .}}{{end}}{{if .HasAvailableSubCommands}}

Run "{{.CommandPath}} COMMAND --help" for a command's arguments, flags and examples.{{end}}{{if .Runnable}}{{with .Annotations}}

{{exitStatus}}{{with index . "lazaret_exit"}}
  ({{.}}){{end}}{{end}}{{end}}
`

func init() {
	cobra.AddTemplateFunc("ownFlags", func(c *cobra.Command) string { return flagUsages(c, false) })
	cobra.AddTemplateFunc("settingFlags", func(c *cobra.Command) string { return flagUsages(c, true) })
	cobra.AddTemplateFunc("exitStatus", func() string { return exitStatus })
	cobra.EnableCommandSorting = false
}

// flagUsages lists a command's own flags, or the Config settings it reads.
func flagUsages(c *cobra.Command, settings bool) string {
	fs := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		_, isSetting := f.Annotations[settingAnnotation]
		if isSetting == settings {
			fs.AddFlag(f)
		}
	})
	return strings.TrimRight(fs.FlagUsagesWrapped(110), "\n ")
}

func commandInspect() *cobra.Command {
	return leaf{use: "inspect [flags] [FILE...]", declare: declareInspect, files: true,
		args:  "  FILE  a TIFF master or a UN/EDIFACT interchange (with --batch, none are needed)",
		short: "validate files locally, no queue and no ledger",
		long: `Validate each FILE (a TIFF master or a UN/EDIFACT interchange, told apart by
its content) with the workers' own rules, or every item of a batch manifest
with fixity and manifest rules, and say where a first attempt would be
routed. Nothing is enqueued or recorded.`, exit: "1: at least one file would not be accepted",
		example: `  lazaret inspect scan-0001.tif
  lazaret inspect --batch /srv/ingest/batch-17/manifest.json --json
  lazaret inspect --kind edifact --locode unlocode.csv IFTMIN.edi`}.command()
}

func commandSubmit() *cobra.Command {
	return leaf{use: "submit [flags] MANIFEST", declare: declareSubmit, files: true,
		args:  "  MANIFEST  the batch manifest (JSON); its items' paths are relative to its folder",
		short: "check a batch manifest and enqueue its items",
		long: `Read MANIFEST (JSON: batch_id, submitter, items with object_id, path, sha256,
size and metadata), refuse it whole if any item is wrong, and enqueue every
item the ledger has not settled yet. Items already queued, or settled, are
listed and not enqueued again; an open failure whose entry changed in the
manifest (a field corrected, a new digest) is replayed as a new attempt of
the same object. With --wait, follow the batch until every item has an
outcome: a progress bar on a terminal, a line per change otherwise.`,
		exit: "1: the manifest was refused, or with --wait an item failed",
		example: `  lazaret submit /srv/ingest/batch-17/manifest.json
  lazaret submit manifest.json --wait
  lazaret submit manifest.json --dry-run --json`}.command()
}

func commandWorker() *cobra.Command {
	return leaf{use: "worker [flags]", declare: declareWorker,
		short: "run workers until SIGINT or SIGTERM",
		long: `Process queued items: validate, classify, record the PREMIS events, route.
SIGTERM drains running tasks (--drain-timeout). Archived tasks are
reconciled with the ledger every --reconcile-every, and registry files
reloaded.`,
		example: `  lazaret worker --redis redis://127.0.0.1:6379/0 --ledger /var/lib/lazaret/ledger.db
  LAZARET_LEDGER=postgres://lazaret_writer@db/lazaret lazaret worker --concurrency 8`}.command()
}

func commandServe() *cobra.Command {
	return leaf{use: "serve [flags]", declare: declareServe,
		short: "workers, the /v1/ API, /metrics and read-only asynqmon",
		long: `Serve the HTTP API (/v1/), Prometheus metrics (/metrics), health checks
(/healthz, /readyz) and asynqmon (read-only, at /monitoring/), and run the
workers unless --no-worker. Loopback only unless a read token is set.`,
		example: `  lazaret serve
  lazaret serve --no-worker --listen 0.0.0.0:8080 --read-token "$TOKEN" --ingest-root /srv/ingest`}.command()
}

func commandDemo() *cobra.Command {
	return leaf{use: "demo [flags]", declare: declareDemo,
		short: "everything in one process: embedded Redis, SQLite ledger, generated batches",
		long: `Generate the fixture batches (TIFF masters and EDIFACT interchanges, good and
bad), submit them to workers on an embedded Redis, wait until every item has
settled, and print where each went. Exit 0 only if every item landed where it
must.`,
		example: `  lazaret demo
  lazaret demo --data ./demo-data`}.command()
}

func commandBench() *cobra.Command {
	return leaf{use: "bench [flags]", declare: declareBench,
		short: "measure validation, the pipeline and the ledger's queries on this machine",
		long: `Generate a large TIFF master and a large interchange once (in --dir) and
measure validation throughput against a plain read of the same bytes; drain
small masters through the workers and no-op tasks through bare asynq on one
private Redis at the same concurrency (the ratio of the two), again with the
ledger's appends left out (the ceiling: what the worker and the broker cost
alone, reading an empty ledger), and bare asynq whose handler syncs one 1 KB
write before it returns; commit as many accepted masters into each ledger
alone, from 2 and 8 writers, against bare asynq at that concurrency (what
the ledger allows with no worker); and time the operators' queries on
ledgers of --ledger-items items. ITEMS/COMMIT is how many appends a commit
of the group committer held.`,
		example: `  lazaret bench --rounds 5
  lazaret bench --pipeline-items 0 --ledger-items 2000,20000,200000`}.command()
}

func commandReconcileBroker() *cobra.Command {
	return leaf{use: "reconcile-broker [flags]", declare: declareReconcileBroker,
		short: "compare the ledger with the broker; record and repair the gaps",
		long: `Archived tasks with no ledger event are recorded; items the ledger expects in
the broker but the broker lost are enqueued or parked again; dead letters the
broker no longer holds are reported (they stay listable and replayable).
Workers do this on their own at start and after a Redis restart.`,
		example: `  lazaret reconcile-broker --dry-run
  lazaret reconcile-broker --json`}.command()
}

func commandBatch() *cobra.Command {
	return group("batch", "a batch's items and where each stands", "",
		leaf{use: "status [flags] BATCH_ID", declare: declareBatch("status"),
			args:  "  BATCH_ID  the manifest's batch_id",
			short: "every item's latest outcome, and the counts",
			long: `List every item of the batch with its latest outcome in the ledger (submitted,
accepted, retry, dead-letter, quarantine, audit-hold, replayed, discarded),
and how far the batch has come: done of the items it was submitted with,
pending, retrying, the rate and the time left.`, exit: "1: the ledger knows nothing of the batch",
			example: `  lazaret batch status batch-17
  lazaret batch status batch-17 --json`}.command(),
		leaf{use: "watch [flags] BATCH_ID", declare: declareBatch("watch"),
			args:  "  BATCH_ID  the manifest's batch_id",
			short: "follow a batch until every item has an outcome",
			long: `Follow the batch in the ledger until every item it was submitted with has
an outcome: a progress bar on a terminal, a line per change otherwise; then a
summary.`, exit: "1: an item failed (dead-letter, quarantine, audit-hold), or --timeout passed",
			example: `  lazaret batch watch batch-17
  lazaret batch watch batch-17 --timeout 2h`}.command())
}

func commandEvents() *cobra.Command {
	return group("events", "PREMIS events in the ledger", "",
		leaf{use: "ls [flags]", declare: declareEvents("ls"),
			short: "list events, oldest first",
			long:  "List the ledger's PREMIS events, oldest first, optionally for one object,\nbatch or correlation. The ledger is read a page of 1,000 events at a time,\nand the table's columns are aligned a page at a time (use --json in scripts).",
			example: `  lazaret events ls --object scan-0001
  lazaret events ls --batch batch-17 --since 24h --json`}.command(),
		leaf{use: "export [flags]", declare: declareEvents("export"),
			short: "write events as PREMIS 3.0 XML",
			long: `Write the ledger's events as a PREMIS 3.0 XML document, with the chain head
the export was taken at (check it later with ledger verify --anchor).
--format mets wraps them as Archivematica's METS holds PREMIS (one amdSec per
file: its object, events and agents), for Archivematica's METS schematron
(docs/archivematica.md). The whole chain is verified first (against the
checkpoint log, with --checkpoint-dir): a ledger that does not verify is not
exported (exit 1, naming its first problem) unless --unverified, which marks
the document.`,
			exit: "1: the ledger is not intact (nothing is written), or the export failed",
			example: `  lazaret events export --batch batch-17 -o batch-17.premis.xml
  lazaret events export --batch batch-17 --format mets --organisation "Your Archive" -o batch-17.mets.xml
  lazaret events export --object scan-0001`}.command())
}

func commandLedger() *cobra.Command {
	return group("ledger", "the ledger itself", "",
		leaf{use: "verify [flags]", declare: declareLedgerVerify,
			short: "check the ledger's hash chain and guards",
			long: `Walk the ledger's hash chain: every event chains to the one before, the
guards against updates and deletes are in place, the recorded head is the
last event, each --anchor (a head from an export or an earlier verify)
is on the chain, and, with --checkpoint-dir, the chain holds the newest signed
checkpoint of the log: as many events as it counts, its hash at its count.
A ledger wiped, cut short or rewritten and recomputed since fails, and so
does a ledger with events whose log holds no checkpoint (a log removed or
emptied; lazaret ledger checkpoint --init anchors a ledger never
checkpointed). With --witness DIR the chain is also held to the newest
checkpoint published there, which a ledger and log rolled back together
fail. With --checkpoint-key the result is recorded in the log, signed.`, exit: "1: the ledger is not intact (every problem is printed)",
			example: `  lazaret ledger verify
  lazaret ledger verify --checkpoint-dir /srv/lazaret-checkpoints --checkpoint-pubkey KEY
  lazaret ledger verify --anchor 1200:9f86d081884c7d65... --json`}.command(),
		leaf{use: "recover [flags]", declare: declareLedgerRecover,
			short: "re-derive what a ledger restored from a backup lost",
			long: `After the ledger went back in time (restored from a backup, or a PostgreSQL
replica promoted before it received the last writes), re-derive from the
broker what can be: a task the broker completed of which the ledger holds no
event is recorded as submitted again (with a note saying why); every item
whose outcome the ledger lost is run again under its own task id; archived
tasks without an event are recorded. With --checkpoint-dir it also says how
many events the checkpoint log counted that the ledger does not hold. The
workers' decisions on the re-run items are the new outcomes (docs/ha.md).`,
			example: `  lazaret ledger recover --dry-run
  lazaret ledger recover --checkpoint-dir /srv/lazaret-checkpoints --json`}.command(),
		leaf{use: "checkpoint [flags]", declare: declareLedgerCheckpoint,
			short: "sign the verified head into the checkpoint log, and publish it to a witness",
			long: `Verify the whole ledger against the checkpoint log (and the witness, with
--publish); when it is intact, sign its head with --checkpoint-key, append it
to the log and, with --publish DIR, write it to the witness as a new file.
Workers sign heads as they append; this command is for what must be an
explicit act: anchoring a ledger that has events and no checkpoint (--init),
publishing to a witness the ledger's host cannot rewrite (run it from a
timer), and re-anchoring that witness after the ledger went back in time
(--reanchor), which stays in the witness as the record that it did.
The signed layout, and how openssl verifies it: docs/checkpoints.md.`, exit: "1: the ledger does not verify (nothing is signed)",
			example: `  lazaret ledger checkpoint --init --checkpoint-dir /srv/lazaret-checkpoints --checkpoint-key /etc/lazaret/checkpoint.key
  lazaret ledger checkpoint --publish /mnt/witness
  lazaret ledger verify --witness /mnt/witness`}.command(),
		leaf{use: "keygen -o FILE", declare: declareLedgerKeygen,
			short: "write a new checkpoint signing key",
			long: `Write a new ed25519 key that signs checkpoints of the ledger's head to FILE
(mode 0600; an existing file is never replaced) and print its public key,
which checks them (--checkpoint-pubkey) without the power to sign.`,
			example: `  lazaret ledger keygen -o /etc/lazaret/checkpoint.key`}.command())
}

func commandContrl() *cobra.Command {
	return leaf{use: "contrl [flags] FILE.edi", declare: declareContrl, files: true,
		args:  "  FILE.edi  a UN/EDIFACT interchange",
		short: "print the CONTRL report for an interchange",
		long: `Print the UN/EDIFACT CONTRL syntax and service report Lazaret would send back
for the interchange: acknowledged (action 7) or rejected (action 4) with the
fault's segment, element and 0085 code. CONTRL answers syntax: a message
that broke a business rule is answered by APERAK (lazaret aperak), unless
the sender reads CONTRL only (--reply-mode, --reply-partner). The report
goes byte for byte to a file or a pipe, escaped on a terminal.`,
		exit: "1: the file cannot be read; with --json, also when the report rejects anything",
		example: `  lazaret contrl IFTMIN.edi
  lazaret contrl IFTMIN.edi --json`}.command()
}

func commandAperak() *cobra.Command {
	return leaf{use: "aperak [flags] FILE.edi", declare: declareAperak, files: true,
		args:  "  FILE.edi  a UN/EDIFACT interchange",
		short: "print the APERAK for an interchange's business-rule rejections",
		long: `Print the UN/EDIFACT APERAK (application error and acknowledgement, D.01B)
Lazaret would send back for the messages of the interchange that broke a
business rule or a registry (unknown UN/LOCODE, ISO 6346 check digit, VGM,
HS code, party role): one APERAK message each, with an ERC error code, the
segment, element and component in an FTX, and the message and segment in an
RFF. Syntax faults are CONTRL's (lazaret contrl). Nothing is printed when no
message broke a rule, or when the sender reads CONTRL only. The report goes
byte for byte to a file or a pipe, escaped on a terminal.`,
		exit: "1: the file cannot be read; with --json, also when the APERAK rejects a message or the interchange is rejected whole",
		example: `  lazaret aperak IFTMIN.edi
  lazaret aperak IFTMIN.edi --json`}.command()
}

func commandStats() *cobra.Command {
	return leaf{use: "stats [flags]", declare: declareStats,
		short: "queue sizes and latency, as asynq counts them",
		long:  "Per queue: pending, active, scheduled, retry, archived and completed tasks,\nand the age of the oldest pending task (what /v1/queues serves).",
		example: `  lazaret stats
  lazaret stats --json`}.command()
}

func commandVersion() *cobra.Command {
	return leaf{use: "version [flags]", declare: declareVersion, short: "print the version", long: "Print the version.",
		example: "  lazaret version\n  lazaret --version"}.command()
}

// failureGroup is lazaret dlq|quarantine|hold.
func failureGroup(fc failureCommand) *cobra.Command {
	var children []*cobra.Command
	for _, sub := range fc.subcommands {
		s := failureHelp(fc, sub)
		l := leaf{use: s.use, short: s.short, long: s.long, example: s.example, args: s.args,
			declare: declareFailure(fc, sub)}
		switch sub {
		case "show", "replay", "discard", "release", "reject":
			l.ids = func(cmd *cobra.Command, toComplete string) []cobra.Completion {
				return failureIDs(fc.destination, cmd, toComplete)
			}
		}
		children = append(children, l.command())
	}
	return group(fc.name, fc.short, fc.long, children...)
}

// flagValues are the values shell completion offers for the flags that
// take one of a known set: failure codes (the catalogue of docs/codes.md),
// classes, kinds, destinations, formats.
func flagValues() map[string]func() []cobra.Completion {
	return map[string]func() []cobra.Completion{
		"code": func() []cobra.Completion {
			var out []cobra.Completion
			for _, c := range api.Codes() {
				if !c.Family {
					out = append(out, cobra.CompletionWithDesc(c.Code, c.Meaning))
				}
			}
			return out
		},
		"class": func() []cobra.Completion {
			var out []cobra.Completion
			for _, c := range premis.Classes() {
				out = append(out, string(c))
			}
			return out
		},
		"destination": func() []cobra.Completion {
			var out []cobra.Completion
			for _, d := range premis.Destinations() {
				out = append(out, string(d))
			}
			return out
		},
		"kind":   func() []cobra.Completion { return validate.KindNames() },
		"format": func() []cobra.Completion { return []cobra.Completion{"premis-xml", "mets"} },
	}
}

// failureIDs offers the open failures of the queue at dest whose object id
// (or event id) begins with toComplete, each with its code: read from the
// ledger cmd's flags name (--ledger, --config, else LAZARET_LEDGER or the
// default), query-only, within two seconds; nothing when it cannot be read.
// An id a terminal would not show as itself is left out.
func failureIDs(dest premis.Destination, cmd *cobra.Command, toComplete string) []cobra.Completion {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cfg := defaultConfig()
	if err := cfg.load(cmd.Flags(), []string{"ledger"}); err != nil {
		return nil
	}
	l, err := cfg.openReadOnly(ctx)
	if err != nil {
		return nil
	}
	defer l.Close()
	fails, err := ingest.Failures(ctx, l, ingest.FailureFilter{Destination: dest, Limit: 500})
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, f := range fails {
		id := f.ObjectID
		if !strings.HasPrefix(id, toComplete) {
			id = f.ID
		}
		if strings.HasPrefix(id, toComplete) && safeText(id) == id && !strings.ContainsAny(id, " \t") {
			out = append(out, cobra.CompletionWithDesc(id, safeText(f.Code)))
		}
	}
	return out
}
