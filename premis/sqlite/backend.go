package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/lazaret/lazaret/premis"
)

// The SQLite ledger is a file: a bare path, or sqlite://path.
func init() {
	premis.RegisterBackend(premis.Backend{
		Schemes: []string{"", "sqlite"},
		File:    file,
		Open: func(ctx context.Context, setting string) (premis.Ledger, error) {
			return Open(ctx, file(setting))
		},
		OpenRead: func(ctx context.Context, setting string) (premis.Ledger, error) {
			return OpenRead(ctx, file(setting))
		},
		OpenAudit: func(ctx context.Context, setting string) (premis.AuditLedger, error) {
			return OpenAudit(ctx, file(setting))
		},
	})
}

func file(setting string) string {
	if len(setting) > len("sqlite://") && strings.EqualFold(setting[:len("sqlite://")], "sqlite://") {
		return setting[len("sqlite://"):]
	}
	return setting
}

// OpenRead opens an existing ledger query-only, for a command that only
// reads: reading never writes, migrates or creates. A ledger whose
// append-only guards or head record are gone is refused, as Open refuses
// it (premis.ErrTampered), rather than shown; a file that is no ledger, or
// one too old to read without the upgrade Open makes, is premis.ErrNotLedger.
func OpenRead(ctx context.Context, path string) (*Ledger, error) {
	l, err := OpenAudit(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("ledger %s %w (a worker creates and upgrades ledgers; read commands change nothing): %w", path, premis.ErrNotLedger, err)
	}
	if err := l.Guards(ctx); err != nil {
		l.Close()
		return nil, err
	}
	if _, ok, err := l.RecordedHead(ctx); err != nil || !ok {
		l.Close()
		if err == nil {
			err = fmt.Errorf("sqlite ledger %s: %w: the head record is gone (run lazaret ledger verify)", path, premis.ErrTampered)
		}
		return nil, err
	}
	return l, nil
}
