package validate

import (
	"testing"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
)

// TestRecentDirsLookup: the remembered lookups give what the directory
// gives, for six types and releases taken in turn (more than the four
// remembered, so that each is looked up again once pushed out), a message
// of another agency never a table.
func TestRecentDirsLookup(t *testing.T) {
	t.Parallel()
	msgs := []edifact.Message{
		{Type: "IFTMIN", Version: "D", Release: "99B", Agency: "UN"},
		{Type: "VERMAS", Version: "D", Release: "16A", Agency: "UN"},
		{Type: "BAPLIE", Version: "D", Release: "95B", Agency: "UN"},
		{Type: "IFTMIN", Version: "D", Release: "99B", Agency: "EN"},
		{Type: "IFTMIN", Version: "D", Release: "96A", Agency: "UN"},
		{Type: "CODECO", Version: "D", Release: "95B", Agency: "UN"},
	}
	var r recentDirs
	for round := 0; round < 3; round++ {
		for i := range msgs {
			m := &msgs[i]
			var want *directory.Message
			if m.Agency == "UN" {
				want = directory.Lookup(m.Version, m.Release, m.Type)
			}
			e := r.lookup(m, nil)
			if e.def != want {
				t.Errorf("round %d: %s:%s:%s:%s: table %v, want %v", round, m.Type, m.Version, m.Release, m.Agency, e.def, want)
			}
			if e.typ != m.Type || e.version != m.Version || e.release != m.Release || e.agency != m.Agency {
				t.Errorf("round %d: %s:%s:%s:%s: entry of %s:%s:%s:%s", round, m.Type, m.Version, m.Release, m.Agency, e.typ, e.version, e.release, e.agency)
			}
			if again := r.lookup(m, nil); again != e {
				t.Errorf("round %d: %s:%s:%s:%s: a second lookup found another entry", round, m.Type, m.Version, m.Release, m.Agency)
			}
		}
	}
	if directory.Lookup("D", "99B", "IFTMIN") == nil || directory.Lookup("D", "16A", "VERMAS") != nil {
		t.Fatal("the test wants IFTMIN D:99B in the directory and VERMAS D:16A not")
	}
}
