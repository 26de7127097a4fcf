package premis_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/premis"
	_ "github.com/lazaret/lazaret/premis/postgres"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// TestBackendsByScheme: a ledger setting finds the backend its scheme
// names, a bare path the SQLite file, and a scheme nobody registered a
// clear refusal naming the ones that are, rather than a file of that name.
func TestBackendsByScheme(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	for _, setting := range []string{path, "sqlite://" + path, "SQLite://" + path} {
		b, err := premis.BackendFor(setting)
		if err != nil {
			t.Fatalf("%s: %v", setting, err)
		}
		if b.File == nil || b.File(setting) != path {
			t.Errorf("%s: the backend's file is not %s", setting, path)
		}
		l, err := b.Open(context.Background(), setting)
		if err != nil {
			t.Fatalf("%s: %v", setting, err)
		}
		if _, ok := l.(*sqlite.Ledger); !ok {
			t.Errorf("%s opened a %T, want the SQLite ledger", setting, l)
		}
		l.Close()
	}
	for _, setting := range []string{"postgres://u@h/db", "postgresql://u@h/db"} {
		b, err := premis.BackendFor(setting)
		if err != nil {
			t.Fatalf("%s: %v", setting, err)
		}
		if b.File != nil {
			t.Errorf("%s: a server ledger has a file", setting)
		}
	}
	_, err := premis.BackendFor("mysql://u@h/db")
	if err == nil || !strings.Contains(err.Error(), `"mysql://"`) || !strings.Contains(err.Error(), "postgres://") || !strings.Contains(err.Error(), "a file path") {
		t.Errorf("mysql://: %v, want a refusal naming the scheme and the backends there are", err)
	}
}

// TestRegisterBackendRefusesASecondClaim: two packages claiming the same
// scheme is a programming error caught at start, not a silent override.
func TestRegisterBackendRefusesASecondClaim(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second backend for postgres:// was registered")
		}
	}()
	premis.RegisterBackend(premis.Backend{Schemes: []string{"postgres"}})
}
