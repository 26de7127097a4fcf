package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/premis"
)

// The ledger a configuration names: its backend by URL scheme, opened for appends, for reading or for audit.

// connect parses the Redis URL and opens the ledger.
func (c *Config) connect(ctx context.Context) (asynq.RedisConnOpt, premis.Ledger, error) {
	opt, err := c.redis()
	if err != nil {
		return nil, nil, err
	}
	l, err := c.openLedger(ctx)
	if err != nil {
		return nil, nil, err
	}
	// Concurrent handlers' appends share transactions (one fsync, one move
	// of the chain head): see premis.GroupCommit. Close stops it.
	return opt, premis.NewGroupCommit(l, 0), nil
}

// backend is the ledger backend the setting's scheme names (see
// premis.RegisterBackend; the packages imported in main.go register).
func (c *Config) backend() (premis.Backend, error) {
	b, err := premis.BackendFor(c.Ledger)
	if err != nil {
		return b, settingErr("ledger: %v", err)
	}
	return b, nil
}

// ledgerExists refuses an SQLite ledger that is not there: a command that
// reads or acts on what is recorded must not create an empty ledger and
// report an empty dead-letter queue (a mistyped --ledger, or none in this
// folder).
func (c *Config) ledgerExists() error {
	if c.Ledger == "" {
		return settingErr("no ledger: there is no data directory ($XDG_DATA_HOME or $HOME) for the default; say --ledger or LAZARET_LEDGER")
	}
	b, err := c.backend()
	if err != nil || b.File == nil {
		return err
	}
	_, err = os.Stat(b.File(c.Ledger))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrNotExist) && c.ledgerDefault:
		return settingErr("no ledger at %s (the default): no worker has written one there; say --ledger or LAZARET_LEDGER for the workers' ledger", c.Ledger)
	case errors.Is(err, os.ErrNotExist):
		return settingErr("no ledger at %s: say --ledger or LAZARET_LEDGER for the workers' ledger (nothing was created)", c.Ledger)
	}
	return settingErr("ledger %s: %v", c.Ledger, err)
}

// connectExisting is connect for commands that act on what is recorded:
// the ledger must exist.
func (c *Config) connectExisting(ctx context.Context) (asynq.RedisConnOpt, premis.Ledger, error) {
	if err := c.ledgerExists(); err != nil {
		return nil, nil, err
	}
	return c.connect(ctx)
}

// openLedger opens the ledger for writing: a postgres:// URL, or an SQLite
// file path (created, with its folder, when missing).
func (c *Config) openLedger(ctx context.Context) (premis.Ledger, error) {
	if c.Ledger == "" {
		return nil, c.ledgerExists()
	}
	b, err := c.backend()
	if err != nil {
		return nil, err
	}
	l, err := b.Open(ctx, c.Ledger)
	if err != nil {
		return nil, err
	}
	if p, ok := l.(interface{ SetReaders(int) }); ok {
		p.SetReaders(c.Concurrency + 2) // the handlers, the API and metrics
	}
	return l, nil
}

// openExistingLedger opens an existing ledger as workers do (schema and
// guard checks included).
func (c *Config) openExistingLedger(ctx context.Context) (premis.Ledger, error) {
	if err := c.ledgerExists(); err != nil {
		return nil, err
	}
	return c.openLedger(ctx)
}

// openReadOnly opens an existing ledger for a read command: one that
// reading never writes, migrates or creates (see premis.Backend.OpenRead).
// A ledger whose append-only guards or head record are gone is refused, as
// Open refuses it (premis.ErrTampered), rather than shown.
func (c *Config) openReadOnly(ctx context.Context) (premis.Ledger, error) {
	if err := c.ledgerExists(); err != nil {
		return nil, err
	}
	b, err := c.backend()
	if err != nil {
		return nil, err
	}
	l, err := b.OpenRead(ctx, c.Ledger)
	if errors.Is(err, premis.ErrNotLedger) {
		return nil, &exitError{code: 2, err: err}
	}
	return l, err
}

// defaultLedger is $XDG_DATA_HOME/lazaret/ledger.db, or
// ~/.local/share/lazaret/ledger.db; "" when neither can be known.
func defaultLedger() string {
	dir := os.Getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(dir) { // the XDG spec: a relative value is ignored
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "lazaret", "ledger.db")
}

// observedLedger times and counts the appends of a group committer; every
// other method is the committer's own (Walk, Guards...), so what asks the
// ledger for them still finds them.
type observedLedger struct {
	*premis.GroupCommit
	observe func(time.Duration, error)
}

func (o observedLedger) Append(ctx context.Context, events ...*premis.Event) ([]bool, error) {
	start := time.Now()
	ins, err := o.GroupCommit.Append(ctx, events...)
	o.observe(time.Since(start), err)
	return ins, err
}

// AppendFirst is observed as Append is. A condition that does not hold
// (premis.ErrNotFirst) is no failure of the ledger.
func (o observedLedger) AppendFirst(ctx context.Context, firsts []premis.FirstDelivery, events ...*premis.Event) ([]bool, error) {
	start := time.Now()
	ins, err := o.GroupCommit.AppendFirst(ctx, firsts, events...)
	if errors.Is(err, premis.ErrNotFirst) {
		o.observe(time.Since(start), nil)
	} else {
		o.observe(time.Since(start), err)
	}
	return ins, err
}

// observeAppends wraps l, the group committer connect opened, so that
// observe hears of every append; another ledger is returned as it is.
func observeAppends(l premis.Ledger, observe func(time.Duration, error)) premis.Ledger {
	if g, ok := l.(*premis.GroupCommit); ok {
		return observedLedger{g, observe}
	}
	return l
}
