package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/premis"
)

// checkpointing is the checkpoint log of a configuration: the log, the key
// that signs its entries (nil for a reader given only the public key) and
// the public key that checks them. The zero value: no checkpoint log.
type checkpointing struct {
	log *premis.CheckpointLog
	key ed25519.PrivateKey
	pub ed25519.PublicKey
}

// checkpoints reads the checkpoint settings: no directory, no log; a
// directory wants the signing key or the public key (both: they must be a
// pair).
func (c *Config) checkpoints() (checkpointing, error) {
	var cp checkpointing
	if c.CheckpointDir == "" {
		if c.CheckpointKey != "" || c.CheckpointPubkey != "" {
			return cp, usageErr("checkpoint key given without --checkpoint-dir: say where the checkpoint log is")
		}
		return cp, nil
	}
	cp.log = &premis.CheckpointLog{Dir: c.CheckpointDir}
	if c.CheckpointKey != "" {
		var err error
		if cp.key, err = premis.ReadCheckpointKey(c.CheckpointKey); err != nil {
			return cp, usageErr("checkpoint key: %v", err)
		}
		cp.pub = cp.key.Public().(ed25519.PublicKey)
	}
	if v := c.CheckpointPubkey; v != "" {
		if b, err := os.ReadFile(v); err == nil {
			v = string(b)
		}
		pub, err := premis.ParseCheckpointPublicKey(v)
		if err != nil {
			return cp, usageErr("checkpoint public key: %v", err)
		}
		if cp.pub != nil && !cp.pub.Equal(pub) {
			return cp, usageErr("--checkpoint-pubkey is not the public key of --checkpoint-key")
		}
		cp.pub = pub
	}
	if cp.pub == nil {
		return cp, usageErr("--checkpoint-dir %s: say --checkpoint-key (to sign and check) or --checkpoint-pubkey (to check)", c.CheckpointDir)
	}
	return cp, nil
}

// read reads the log (nil without one).
func (cp checkpointing) read() (*premis.Checkpoints, error) {
	if cp.log == nil {
		return nil, nil
	}
	return cp.log.Read(cp.pub)
}

// verifier is an incremental verifier of a over the log.
func (cp checkpointing) verifier(a premis.Auditor, cfg *Config) *premis.Verifier {
	return &premis.Verifier{Auditor: a, Log: cp.log, Public: cp.pub, Key: cp.key, Every: cfg.CheckpointEvery, Interval: cfg.CheckpointInterval}
}

// startCheckpoints runs a Verifier over l until the returned stop is
// called: every poll it checks the events appended since its last check
// and, with a signing key, checkpoints the head as it moves. It logs a
// ledger that fails once. Several processes (workers, serve) may run one
// on the same ledger and directory: each checkpoints only a head it read
// from the ledger and checked, and each line is one O_APPEND write. Nil
// without a checkpoint log and no need to check (serve checks without one).
func startCheckpoints(ctx context.Context, cfg *Config, l premis.Ledger, log *slog.Logger, always bool) (*premis.Verifier, func(), error) {
	cp, err := cfg.checkpoints()
	if err != nil {
		return nil, nil, err
	}
	if cp.key == nil && !always {
		return nil, func() {}, nil
	}
	v := cp.verifier(l, cfg)
	poll := min(time.Second, cfg.CheckpointInterval)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	reported := false
	fullDone := make(chan struct{})
	go func() {
		// serve walks the whole chain now and then, beside the checks, and
		// records the result (with a key).
		defer close(fullDone)
		if !always || cfg.VerifyEvery <= 0 {
			return
		}
		t := time.NewTicker(cfg.VerifyEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if res, err := v.Full(ctx); err != nil && ctx.Err() == nil {
				log.Error("ledger verify", slog.String("error", err.Error()))
			} else if err == nil {
				log.Info("ledger verified", slog.Bool("intact", res.Intact()), slog.Int64("events", res.Events))
			}
		}
	}()
	go func() {
		defer close(done)
		v.Run(ctx, poll, func(c *premis.Checkpoint, res *premis.Verification, err error) {
			switch {
			case err != nil:
				log.Error("checkpoint", slog.String("error", err.Error()))
			case res != nil && !res.Intact() && !reported:
				reported = true
				log.Error("ledger not intact", slog.String("ledger", ledgerName(cfg)), slog.String("problem", res.Problems[0].String()))
			case c != nil:
				log.Debug("checkpoint", slog.Int64("count", c.Count), slog.String("hash", c.Hash))
			}
		})
	}()
	return v, func() {
		cancel()
		<-done
		<-fullDone
	}, nil
}

// warnUnverified tells a listing's reader on stderr when the ledger fails
// its incremental check (premis.Verifier from the newest checkpoint: it
// reads what was appended since, not the ledger). Without a checkpoint log
// it says nothing; the open already refused missing guards and heads.
func warnUnverified(ctx context.Context, cfg *Config, l premis.Ledger, stderr io.Writer) error {
	cp, err := cfg.checkpoints()
	if err != nil || cp.log == nil {
		return err
	}
	v := cp.verifier(l, cfg)
	v.Key = nil // a listing signs nothing
	res, err := v.Check(ctx)
	if err != nil {
		return err
	}
	if !res.Intact() {
		fmt.Fprintf(stderr, "warning: ledger %s is not intact: %s (run lazaret ledger verify)\n", ledgerName(cfg), res.Problems[0])
	}
	return nil
}

// declareLedgerKeygen declares lazaret ledger keygen, which writes a new
// checkpoint signing key (mode 0600, never over an existing file) and prints
// its public key.
func declareLedgerKeygen(fs *pflag.FlagSet, _ *Config) ([]string, action) {
	out := fs.StringP("o", "o", "", "write the private key to this `FILE` (mode 0600; an existing file is not replaced)")
	return nil, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		if len(args) > 0 {
			return usageErr("ledger keygen: unexpected arguments %q", args)
		}
		if *out == "" {
			return usageErr("ledger keygen: say -o FILE for the private key")
		}
		key, err := premis.GenerateCheckpointKey()
		if err != nil {
			return err
		}
		b, err := premis.MarshalCheckpointKey(key)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return usageErr("ledger keygen: %s exists: a key is never replaced (checkpoints signed with it would no longer verify)", *out)
			}
			return err
		}
		_, err = f.Write(b)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(*out)
			return err
		}
		fmt.Fprintf(stderr, "wrote the checkpoint signing key to %s; its public key (for --checkpoint-pubkey) is:\n", *out)
		fmt.Fprintln(stdout, premis.EncodeCheckpointPublicKey(key.Public().(ed25519.PublicKey)))
		return nil
	}
}
