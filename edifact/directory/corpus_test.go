package directory_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

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
			cur.Segments = append(cur.Segments, s.Clone())
		}
		if s.Tag == "UNT" && cur != nil {
			out = append(out, cur)
			cur = nil
		}
	}
}

// TestCorpusFindings lists the findings of every message of the corpus
// interchanges whose release the directory holds.
func TestCorpusFindings(t *testing.T) {
	dir := testenv.Corpus(t, "edifact")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	sort.Strings(files)
	fx, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "logistics", "*.edi"))
	files = append(files, fx...)
	for _, f := range files {
		for _, m := range messagesOf(t, f) {
			def := directory.Lookup(m.Version, m.Release, m.Type)
			if def == nil {
				t.Logf("%s msg %s %s:%s:%s: no directory", filepath.Base(f), m.Ref, m.Type, m.Version, m.Release)
				continue
			}
			fs := def.Check(m, directory.Options{})
			var b strings.Builder
			for _, x := range fs {
				b.WriteString("\n    " + x.String())
			}
			t.Logf("%s msg %s %s: %d findings%s", filepath.Base(f), m.Ref, def.Name(), len(fs), b.String())
		}
	}
}
