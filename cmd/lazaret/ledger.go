package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// declareLedgerVerify declares lazaret ledger verify, which walks the
// ledger's hash chain (premis.Verify). Exit 0 with a one-line summary when
// it is intact; exit 1 with every problem, one a line (the first broken link
// by seq, event id and what differs; missing guards; truncation; a head that
// does not match), when it is not.
func declareLedgerVerify(fs *pflag.FlagSet, _ *Config) ([]string, action) {
	asJSON := fs.Bool("json", false, "the verification as one JSON object")
	var anchors headsFlag
	fs.Var(&anchors, "anchor", "a head recorded earlier, `COUNT:HASH` (from an export or an earlier verify), that must be on the chain; repeat for several")
	noCheckpoints := fs.Bool("no-checkpoints", false, "do not hold the chain to the checkpoint log, and record nothing in it")
	witness := fs.String("witness", "", "also hold the chain to the newest checkpoint published to the witness `DIR` (lazaret ledger checkpoint --publish): a ledger and its checkpoint log rolled back together fail")
	return []string{"ledger", "checkpoint"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		if len(args) > 0 {
			return usageErr("ledger verify: unexpected arguments %q", args)
		}
		if *witness != "" && (*noCheckpoints || cfg.CheckpointDir == "") {
			return usageErr("ledger verify --witness: needs --checkpoint-dir and its key (--checkpoint-pubkey or --checkpoint-key): the witness's checkpoints are signed with it")
		}
		cp, err := cfg.checkpoints()
		if err != nil {
			return err
		}
		if *noCheckpoints {
			cp = checkpointing{}
		}
		cps, err := cp.read()
		if err != nil {
			return err
		}
		a, closeLedger, err := openAuditor(ctx, cfg)
		if err != nil {
			return err
		}
		defer closeLedger()
		var v *premis.Verification
		if *witness != "" {
			w, err := readWitness(ctx, a, *witness, cp.pub)
			if err != nil {
				return err
			}
			v, err = premis.VerifyWitnessed(ctx, a, cps, w, anchors...)
			if err != nil {
				return err
			}
		} else if v, err = verifyLedger(ctx, a, cps, anchors...); err != nil {
			return err
		}
		name := ledgerName(cfg)
		// The result is recorded (signed) when the key is at hand: listings
		// then say a ledger failed without walking it.
		if _, err := premis.Record(cp.log, cp.key, v, time.Now()); err != nil {
			return err
		}
		if cp.log == nil && !*noCheckpoints {
			fmt.Fprintln(stderr, "note: no checkpoint log (--checkpoint-dir): a ledger wiped, cut short or recomputed by someone who can write the database would verify")
		}
		if *asJSON {
			out := struct {
				Ledger string `json:"ledger"`
				Intact bool   `json:"intact"`
				*premis.Verification
			}{name, v.Intact(), v}
			if err := writeJSON(stdout, out); err != nil {
				return err
			}
			if !v.Intact() {
				return &exitError{code: 1}
			}
			return nil
		}
		if v.Intact() {
			fmt.Fprintln(stdout, v)
			return nil
		}
		for _, p := range v.Problems {
			fmt.Fprintln(stdout, p)
		}
		if v.BrokenLinks > 1 {
			fmt.Fprintf(stdout, "link: %d rows in all do not chain; the first is above\n", v.BrokenLinks)
		}
		return &exitError{code: 1, err: fmt.Errorf("ledger %s is not intact: %s", name, v)}
	}
}

// verifyLedger is premis.Verify, against the checkpoints when there is a
// log.
func verifyLedger(ctx context.Context, a premis.Auditor, cps *premis.Checkpoints, anchors ...premis.Head) (*premis.Verification, error) {
	if cps != nil {
		return premis.VerifyCheckpointed(ctx, a, cps, anchors...)
	}
	return premis.Verify(ctx, a, anchors...)
}

// openAuditor opens the ledger as every command does. When that fails its
// tamper checks (premis.ErrTampered: a guard missing, the head not the last
// event), it opens it for audit only, so the whole damage can be reported.
func openAuditor(ctx context.Context, cfg *Config) (premis.Auditor, func() error, error) {
	l, err := cfg.openExistingLedger(ctx)
	if err == nil {
		return l, l.Close, nil
	}
	if !errors.Is(err, premis.ErrTampered) {
		return nil, nil, err
	}
	b, berr := cfg.backend()
	if berr != nil {
		return nil, nil, berr
	}
	audit, auditErr := b.OpenAudit(ctx, cfg.Ledger)
	if auditErr == nil {
		return audit, audit.Close, nil
	}
	return nil, nil, errors.Join(err, auditErr)
}

// ledgerName is the ledger setting without a password.
func ledgerName(cfg *Config) string {
	if premis.Scheme(cfg.Ledger) != "" {
		if u, err := url.Parse(cfg.Ledger); err == nil {
			return u.Redacted()
		}
	}
	return cfg.Ledger
}

// headsFlag is a repeatable COUNT:HASH flag.
type headsFlag []premis.Head

func (h *headsFlag) String() string {
	s := make([]string, len(*h))
	for i, x := range *h {
		s[i] = x.String()
	}
	return strings.Join(s, ",")
}

func (h *headsFlag) Type() string { return "anchor" }

func (h *headsFlag) Set(v string) error {
	x, err := premis.ParseHead(v)
	if err != nil {
		return err
	}
	*h = append(*h, x)
	return nil
}

// readWitness reads what the witness at dir holds of a's ledger.
func readWitness(ctx context.Context, a premis.Auditor, dir string, pub ed25519.PublicKey) (*premis.Witnessed, error) {
	id, err := premis.LedgerID(ctx, a)
	if err != nil {
		return nil, err
	}
	return premis.Witness{Dir: dir}.Read(id, pub)
}

// declareLedgerCheckpoint declares lazaret ledger checkpoint, which signs
// the head of a ledger that verifies in full, appends it to the checkpoint
// log and, with --publish, to a witness. It is how a ledger is anchored for
// the first time (--init) and re-anchored after it went back in time
// (--reanchor): both are explicit, and the re-anchoring stays in the
// witness as the record that it happened.
func declareLedgerCheckpoint(fs *pflag.FlagSet, _ *Config) ([]string, action) {
	publish := fs.String("publish", "", "also publish the checkpoint to the witness `DIR`, a place the ledger's host cannot rewrite (a new file each time, never one replaced)")
	first := fs.Bool("init", false, "anchor a ledger whose checkpoint log holds no checkpoint yet (checkpoints were never kept for it, or the log was lost)")
	reanchor := fs.Bool("reanchor", false, "re-anchor the witness after the ledger went back in time (a restored backup, a promoted replica that lagged): its newer checkpoints no longer hold the chain; the re-anchoring is published and stays")
	return []string{"ledger", "checkpoint"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		if len(args) > 0 {
			return usageErr("ledger checkpoint: unexpected arguments %q", args)
		}
		if *reanchor && *publish == "" {
			return usageErr("ledger checkpoint --reanchor: say the witness to re-anchor (--publish DIR)")
		}
		cp, err := cfg.checkpoints()
		if err != nil {
			return err
		}
		if cp.key == nil {
			return usageErr("ledger checkpoint: needs --checkpoint-key (the key that signs checkpoints) and --checkpoint-dir")
		}
		cps, err := cp.read()
		if err != nil {
			return err
		}
		a, closeLedger, err := openAuditor(ctx, cfg)
		if err != nil {
			return err
		}
		defer closeLedger()
		var w *premis.Witnessed
		if *publish != "" {
			if err := os.MkdirAll(*publish, 0o755); err != nil {
				return err
			}
			if w, err = readWitness(ctx, a, *publish, cp.pub); err != nil {
				return err
			}
			if w.Newest == nil && len(w.Problems) == 0 {
				w = nil // a witness's first checkpoint is this one
			}
		}
		v, err := premis.VerifyWitnessed(ctx, a, cps, w)
		if err != nil {
			return err
		}
		// What the flags excuse, and nothing else.
		var refused []premis.Problem
		for _, p := range v.Problems {
			switch {
			case *first && v.Unanchored && p.Kind == premis.ProblemCheckpoint && strings.Contains(p.Detail, "holds no checkpoint"):
			case *reanchor && p.Kind == premis.ProblemWitness:
			default:
				refused = append(refused, p)
			}
		}
		switch {
		case len(refused) > 0:
			for _, p := range refused {
				fmt.Fprintln(stdout, p)
			}
			hint := ""
			if v.Unanchored && !*first {
				hint = " (a log with no checkpoint yet: --init anchors it)"
			}
			return &exitError{code: 1, err: fmt.Errorf("ledger checkpoint: ledger %s does not verify, nothing signed%s: %s", ledgerName(cfg), hint, refused[0])}
		case v.Events == 0:
			return &exitError{code: 1, err: fmt.Errorf("ledger checkpoint: ledger %s holds no events: nothing to sign", ledgerName(cfg))}
		}
		status := premis.CheckpointVerified
		if *reanchor {
			status = premis.CheckpointReanchored
		}
		c := &premis.Checkpoint{Ledger: v.First, Status: status, Count: v.Events, Seq: v.Seq, Hash: v.Head, Time: time.Now()}
		c.Sign(cp.key)
		if err := cp.log.Append(c); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "signed the head of %s: %d events, hash %s (%s)\n", ledgerName(cfg), c.Count, c.Hash, c.Status)
		if *publish != "" {
			path, err := premis.Witness{Dir: *publish}.Publish(c)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "published to the witness: %s\n", path)
		}
		return nil
	}
}

// declareLedgerRecover declares lazaret ledger recover: after the ledger
// went back in time (restored from a backup, a replica promoted before it
// received the last writes), re-derive from the broker what can be
// (ingest.Operator.RecoverLedger), and say plainly how far behind the
// checkpoint log the ledger is.
func declareLedgerRecover(fs *pflag.FlagSet, defaults *Config) ([]string, action) {
	dry := fs.Bool("dry-run", false, "say what would be re-derived, change nothing")
	asJSON := fs.Bool("json", false, "the report as one JSON object")
	defaults.LogLevel = "warn"
	return []string{"redis", "ledger", "policy", "checkpoint"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		if len(args) > 0 {
			return usageErr("ledger recover: unexpected arguments %q", args)
		}
		cp, err := cfg.checkpoints()
		if err != nil {
			return err
		}
		cps, err := cp.read()
		if err != nil {
			return err
		}
		opt, ledger, err := cfg.connectExisting(ctx)
		if err != nil {
			return err
		}
		defer ledger.Close()
		behind := ""
		if n := cps.Newest(); n != nil {
			if h, ok, err := ledger.RecordedHead(ctx); err == nil && ok && h.Count < n.Count {
				behind = fmt.Sprintf("the ledger holds %d events; its checkpoint log counted %d at %s: %d events are not in the ledger. "+
					"It went back in time (restored from a backup, or a replica promoted before it received the last writes). "+
					"What the broker still holds is re-derived below; then re-anchor the checkpoints (lazaret ledger checkpoint --reanchor); see docs/ha.md",
					h.Count, n.Count, n.Time.UTC().Format(time.RFC3339), n.Count-h.Count)
			}
		}
		insp := asynq.NewInspector(opt)
		defer insp.Close()
		client := asynq.NewClient(opt)
		defer client.Close()
		w := cfg.worker(ledger, client, cfg.logger(stderr))
		rep, err := cfg.operator(w, client, insp, opt).RecoverLedger(ctx, *dry)
		if err != nil {
			return err
		}
		if *asJSON {
			return api.EncodeJSON(stdout, struct {
				Behind string `json:"behind_checkpoints,omitempty"`
				*ingest.RecoverReport
			}{behind, rep})
		}
		if behind != "" {
			fmt.Fprintln(stdout, behind)
		}
		for _, id := range rep.Unknown {
			fmt.Fprintf(stdout, "%s\tcompleted by the broker, unknown to the ledger: submission recorded again, run again\n", id)
		}
		for _, id := range rep.Reconcile.LedgerBehind {
			fmt.Fprintf(stdout, "%s\tits outcome was lost from the ledger: run again\n", id)
		}
		prefix := ""
		if *dry {
			prefix = "dry run, nothing changed: "
		}
		fmt.Fprintf(stdout, "%s%d item(s) unknown to the ledger recorded again; %d item(s) run again; %d archived task(s) recorded; %d parked again\n",
			prefix, len(rep.Unknown), len(rep.Reconcile.LedgerBehind), len(rep.Reconcile.ArchivedRecorded), len(rep.Reconcile.Reparked))
		return nil
	}
}
