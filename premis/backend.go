package premis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Backend opens one kind of ledger, chosen by the scheme of the ledger's
// URL (postgres://user@host/db) as database/sql chooses a driver: each
// ledger package registers its own in init, and a program offers the
// backends whose packages it imports. A third database is one package.
type Backend struct {
	// Schemes are the URL schemes it answers. "" answers a setting
	// without one (a bare file path).
	Schemes []string
	// File, for a backend whose ledger is a file, is the file's path in
	// the setting; nil for a server. A command that only reads must find
	// the file, not create an empty ledger.
	File func(setting string) string
	// Open opens the ledger for writing: it creates the schema where there
	// is none and upgrades an older one, and refuses a damaged ledger with
	// ErrTampered.
	Open func(ctx context.Context, setting string) (Ledger, error)
	// OpenRead opens an existing ledger for a command that only reads:
	// it creates, upgrades and writes nothing, and refuses a ledger whose
	// guards or head record are gone, as Open does.
	OpenRead func(ctx context.Context, setting string) (Ledger, error)
	// OpenAudit opens an existing chained ledger for Verify alone, checking
	// nothing, so a ledger Open refuses can still be walked to find the
	// damage.
	OpenAudit func(ctx context.Context, setting string) (AuditLedger, error)
}

// AuditLedger is a ledger opened for audit: its chain can be walked, and it
// must be closed.
type AuditLedger interface {
	Auditor
	Close() error
}

var backends struct {
	mu sync.RWMutex
	by map[string]Backend
}

// RegisterBackend makes b the backend of its schemes. It panics when a
// scheme has one already: two packages claim the same ledgers.
func RegisterBackend(b Backend) {
	backends.mu.Lock()
	defer backends.mu.Unlock()
	if backends.by == nil {
		backends.by = map[string]Backend{}
	}
	for _, s := range b.Schemes {
		if _, ok := backends.by[s]; ok {
			panic(fmt.Sprintf("premis: a second ledger backend for scheme %q", s))
		}
		backends.by[s] = b
	}
}

// Scheme is the URL scheme of a ledger setting, lower-cased: "postgres"
// for postgres://..., "" for a bare path.
func Scheme(setting string) string {
	s, _, ok := strings.Cut(setting, "://")
	if !ok {
		return ""
	}
	return strings.ToLower(s)
}

// BackendFor is the backend of setting's scheme.
func BackendFor(setting string) (Backend, error) {
	backends.mu.RLock()
	defer backends.mu.RUnlock()
	scheme := Scheme(setting)
	if b, ok := backends.by[scheme]; ok {
		return b, nil
	}
	known := make([]string, 0, len(backends.by))
	for s := range backends.by {
		if s == "" {
			s = "a file path"
		} else {
			s += "://"
		}
		known = append(known, s)
	}
	slices.Sort(known)
	return Backend{}, fmt.Errorf("no ledger backend for %q (this program knows %s)", scheme+"://", strings.Join(known, ", "))
}
