package directory_test

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
	"github.com/lazaret/lazaret/internal/testenv"
)

// messagesOf reads every complete message (UNH .. UNT) of an interchange
// segment by segment, so that the messages of an interchange whose
// envelope is broken (no UNB, a wrong UNT count, no UNZ) are checked too.
func messagesOf(t *testing.T, path string) []*edifact.Message {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := edifact.NewReader(f, edifact.Limits{})
	var out []*edifact.Message
	var cur *edifact.Message
	var segs []edifact.Segment
	for {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Logf("%s: reading stops: %v", filepath.Base(path), err)
			return out
		}
		switch s.Tag {
		case "UNB":
			if s.Value(1, 2) == "4" && !rd.HasUNA() {
				rd.SetRepetition('*')
			}
		case "UNH":
			cur = &edifact.Message{Ref: s.Value(1, 1), Type: s.Value(2, 1), Version: s.Value(2, 2), Release: s.Value(2, 3),
				Agency: s.Value(2, 4), Assoc: s.Value(2, 5), Offset: s.Offset, Index: s.Index, Number: len(out) + 1}
		}
		if cur != nil {
			segs = append(segs, s.Clone())
		}
		if s.Tag == "UNT" && cur != nil {
			cur.SetSegments(segs)
			segs = nil
			out = append(out, cur)
			cur = nil
		}
	}
}

var update = flag.Bool("update", false, "rewrite testdata/corpus.golden")

// TestCorpusFindings checks every message of the shared corpus's
// interchanges (and of fixtures/logistics) against its release's directory
// where the directory has it, and compares every finding, with its
// position, with testdata/corpus.golden (go test -update rewrites it).
func TestCorpusFindings(t *testing.T) {
	t.Parallel()
	dir := testenv.Corpus(t, "edifact")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	sort.Strings(files)
	fx, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "logistics", "*.edi"))
	if len(files) == 0 || len(fx) == 0 {
		t.Fatalf("%d corpus files, %d fixtures", len(files), len(fx))
	}
	var b strings.Builder
	for _, f := range append(files, fx...) {
		name := filepath.Base(f)
		if strings.Contains(f, "fixtures") {
			name = "fixtures/logistics/" + name
		}
		ms := messagesOf(t, f)
		if len(ms) == 0 {
			fmt.Fprintf(&b, "%s: no complete message\n", name)
		}
		for _, m := range ms {
			def := directory.Lookup(m.Version, m.Release, m.Type)
			if def == nil {
				fmt.Fprintf(&b, "%s: message %s %s:%s:%s:%s: no directory, envelope only\n", name, m.Ref, m.Type, m.Version, m.Release, m.Agency)
				continue
			}
			fs := def.Check(m, directory.Options{})
			fmt.Fprintf(&b, "%s: message %s %s: %d findings\n", name, m.Ref, def.Name(), len(fs))
			for _, x := range fs {
				fmt.Fprintf(&b, "\t%s\n", x)
			}
		}
	}
	golden := filepath.Join("testdata", "corpus.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("findings differ from %s (go test -update rewrites it):\n%s", golden, diffLines(string(want), got))
	}
}

// diffLines lists the lines only in want (-) or only in got (+).
func diffLines(want, got string) string {
	count := map[string]int{}
	for _, l := range strings.Split(want, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(got, "\n") {
		count[l]--
	}
	var b strings.Builder
	for l, n := range count {
		switch {
		case n > 0:
			b.WriteString("- " + l + "\n")
		case n < 0:
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// TestCheckerIsValidate: one Checker, reused from message to message and
// handed each segment in a copy that is wiped after the call, reports on
// every corpus message exactly what Check reports.
func TestCheckerIsValidate(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join(testenv.Corpus(t, "edifact"), "*"))
	fx, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "logistics", "*.edi"))
	var c directory.Checker
	checked := 0
	for _, f := range append(files, fx...) {
		for _, m := range messagesOf(t, f) {
			def := directory.Lookup(m.Version, m.Release, m.Type)
			if def == nil {
				continue
			}
			checked++
			want := def.Check(m, directory.Options{})
			var got []directory.Finding
			c.Begin(def, directory.Options{}, func(f directory.Finding) { got = append(got, f) })
			for i, s := range m.All() {
				cp := s.Clone()
				c.Segment(i, &cp)
				cp = edifact.Segment{Tag: "XXX", Offset: -1} // what the Checker kept of it must not change
				_ = cp
			}
			c.End()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s message %s: Checker differs from Check (-want +got):\n%s", filepath.Base(f), m.Ref, diff)
			}
		}
	}
	if checked < 10 {
		t.Errorf("%d messages checked, want the corpus's", checked)
	}
}
