package validate_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/validate"
)

// The boundaries where attacker bytes enter besides the TIFF walk: the
// manifest, an embedded ICC profile and the registry files. Whatever the
// bytes: no panic, an error or a result, never a read past the input.

func FuzzParseManifest(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	seeds.Add([]byte(`{"batch_id":"b","submitter":"s","items":[{"object_id":"a","kind":"tiff","path":"a.tif","sha256":"` +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `","resolution_dpi":"abc"}]}`))
	seeds.Add([]byte("\xef\xbb\xbf{\"batch_id\":\"b\"}"))
	seeds.Add([]byte(`{"items":[{"object_id":"inv#1","path":"../../etc/shadow"}]} trailing`))
	seeds.Add([]byte(`{"resolution_dpi": 1e999}`))
	seeds.Add([]byte(`{"batch_id":"b","submitter":"s","items":[{"object_id":"a"}],"items":[{"object_id":"b","x":{"k":[{"k":1,"k":2}]}}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := validate.ParseManifest(data)
		if err != nil {
			return
		}
		_ = m.Check(dir, false) // every problem is reported, none panics
	})
}

func FuzzRegistryFiles(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	seeds.Add([]byte(",\"NL\",\"RTM\",\"Rotterdam\",,,,,,,,\n"), false)
	seeds.Add([]byte("hscode,description\n847130,laptops\n"), true)
	seeds.Add([]byte("\"unterminated,\n"), false)
	seeds.Add([]byte("BZh91AY&SY"), false) // a bzip2 header and nothing else
	f.Fuzz(func(t *testing.T, data []byte, hs bool) {
		path := filepath.Join(t.TempDir(), "registry.csv")
		if hs && len(data) >= 3 && string(data[:3]) == "BZh" {
			path += ".bz2"
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		load := validate.LoadLOCODE
		if hs {
			load = validate.LoadHS
		}
		r, err := load(path)
		if err == nil && r == nil {
			t.Fatal("no registry and no error")
		}
		var pe *os.PathError
		if errors.As(err, &pe) && pe.Path != path {
			t.Fatalf("error names another file: %v", err)
		}
	})
}
