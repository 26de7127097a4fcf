package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryFuzzTargetHasSeeds: each fuzz target in the repository has a
// committed seed corpus beside it (make fuzz-seeds writes it), so a fuzz
// run, and the plain go test that runs the corpus, starts from real cases.
func TestEveryFuzzTargetHasSeeds(t *testing.T) {
	root := RepoRoot(t)
	target := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	n := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range target.FindAllSubmatch(b, -1) {
			n++
			dir := filepath.Join(filepath.Dir(p), "testdata", "fuzz", string(m[1]))
			if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
				rel, _ := filepath.Rel(root, dir)
				t.Errorf("%s has no committed seed corpus in %s (make fuzz-seeds)", m[1], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 13 {
		t.Errorf("found %d fuzz targets, want at least 13: the walk missed some", n)
	}
}
