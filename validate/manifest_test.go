package validate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/validate"
)

func codes(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		switch x := e.(type) {
		case nil:
		case *validate.FieldError:
			out = append(out, x.ObjectID+":"+x.Code())
		case interface{ Unwrap() []error }:
			for _, y := range x.Unwrap() {
				walk(y)
			}
		case interface{ Unwrap() error }:
			walk(x.Unwrap())
		}
	}
	walk(err)
	sort.Strings(out)
	return out
}

func TestManifestReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	js := `{"batch_id": "b1", "submitter": "",
	 "items": [
	  {"object_id": "a", "kind": "tiff", "path": "a.tif", "sha256": "XYZ"},
	  {"object_id": "a", "kind": "pdf", "path": "../escape.tif", "sha256": "` + strings.Repeat("a", 64) + `"},
	  {"object_id": "", "kind": "tiff", "path": "/abs.tif", "sha256": "` + strings.Repeat("b", 64) + `", "resolution_dpi": "abc"}
	 ]}`
	path := filepath.Join(dir, "manifest.json")
	os.WriteFile(path, []byte(js), 0o644)
	_, _, err := validate.ReadManifestFile(path)
	// One problem per field and rule; the validator reports the first rule a
	// field breaks (sha256 "XYZ" fails len before hexadecimal).
	// Items without an object id are named by their place, counted from 1;
	// a missing file is reported with the rest, not after they are fixed.
	want := []string{
		":manifest.submitter.required",
		"a:manifest.kind.oneof", "a:manifest.object_id.unique", "a:manifest.path.exists", "a:manifest.path.inside", "a:manifest.sha256.len",
		"item 3:manifest.object_id.required",
		"item 3:manifest.path.inside",
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, codes(err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestManifestSyntaxErrorsHaveLineAndColumn: the position is where the
// JSON breaks, counted as an editor counts it (1-based line and column).
func TestManifestSyntaxErrorsHaveLineAndColumn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		js           string
		line, column int
	}{
		{"{\"batch_id\": \"b\",\n \"submitter\": \"s\"\n \"items\": []}", 3, 2},             // a missing comma before "items"
		{"{\"batch_id\": \"b\",\n  \"items\": [\n    {\"object_id\": \"é\",}\n  ]}", 3, 23}, // a trailing comma; é is one column
		{"{\"batch_id\": \"b\"}\n{}", 2, 1},                                                 // trailing data
		{"\xef\xbb\xbf[1,2]", 1, 1},                                                         // a list, not an object (after the BOM)
		{"", 1, 1},
	} {
		_, err := validate.ParseManifest([]byte(c.js))
		var se *validate.ManifestSyntaxError
		if !errors.As(err, &se) || se.Line != c.line || se.Column != c.column {
			t.Errorf("%q: %v, want line %d column %d", c.js, err, c.line, c.column)
		}
	}
}

// TestManifestWithBOM: Notepad and Excel write a UTF-8 byte-order mark.
func TestManifestWithBOM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.tif"), []byte("II*\x00"), 0o644)
	js := "\xef\xbb\xbf" + `{"batch_id": "b1", "submitter": "s", "items": [{"object_id": "a", "kind": "tiff", "path": "a.tif", "sha256": "` + strings.Repeat("a", 64) + `"}]}`
	path := filepath.Join(dir, "manifest.json")
	os.WriteFile(path, []byte(js), 0o644)
	if m, _, err := validate.ReadManifestFile(path); err != nil || m.BatchID != "b1" {
		t.Fatalf("manifest with a BOM: %v", err)
	}
}

// TestManifestUnknownFieldsNameTheirItem: every unknown field and every
// value of the wrong type, each with its item, its line and its column,
// together with the other problems.
func TestManifestUnknownFieldsNameTheirItem(t *testing.T) {
	t.Parallel()
	sha := strings.Repeat("a", 64)
	js := `{"batch_id": "b1", "submitter": "s", "note": "x",
 "items": [
  {"object_id": "a", "kind": "tiff", "path": "a.tif", "sha256": "` + sha + `", "colour_profile": "sRGB"},
  {"object_id": "b", "kind": "tiff", "path": "b.tif", "sha256": "` + sha + `", "size": "big"},
  {"kind": "tiff", "path": "c.tif", "sha256": "` + sha + `", "dpi": 400}
 ]}`
	dir := t.TempDir()
	path := filepath.Join(dir, "manifest.json")
	os.WriteFile(path, []byte(js), 0o644)
	_, _, err := validate.ReadManifestFile(path)
	want := []string{":manifest.note.known", "a:manifest.colour_profile.known", "a:manifest.path.exists",
		"b:manifest.path.exists", "b:manifest.size.type", "item 3:manifest.dpi.known", "item 3:manifest.object_id.required", "item 3:manifest.path.exists"}
	if diff := cmp.Diff(want, codes(err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	for _, w := range []string{"a: colour_profile: line 3, column 133: not a manifest field", "b: size: line 4, column 133: a JSON string where a number is wanted",
		"item 3: dpi: line 5, column 115", ": note: line 1, column 38"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("lacks %q:\n%v", w, err)
		}
	}
}

func TestManifestRejectsUnknownFieldsAndTrailingData(t *testing.T) {
	t.Parallel()
	for _, js := range []string{`{"batch_id":"b","submitter":"s","items":[],"extra":1}`, `{"batch_id":"b"} {}`, `[1,2]`, ``} {
		if _, err := validate.ParseManifest([]byte(js)); err == nil {
			t.Errorf("%q parsed", js)
		}
	}
}

func master(t *testing.T, name string, pages ...fixtures.Page) (string, string) {
	t.Helper()
	data, _ := encode(t, pages...)
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := validate.CheckMaster(context.Background(), path, nil, validate.DefaultMasterPolicy())
	if err != nil {
		t.Fatal(err)
	}
	return path, rep.SHA256
}

func TestItemRules(t *testing.T) {
	t.Parallel()
	icc := fixtures.ICCProfile("Adobe RGB (1998)")
	rgb := fixtures.Page{Width: 8, Height: 8, Samples: 3, DPI: 400, ICC: icc}
	path, sha := master(t, "m.tif", rgb)
	noICC, shaNoICC := master(t, "n.tif", fixtures.Page{Width: 8, Height: 8, Samples: 3})
	strict := validate.DefaultMasterPolicy()
	strict.Rules.RequireICC = true
	cases := []struct {
		name   string
		path   string
		item   validate.Item
		policy validate.MasterPolicy
		want   []string
	}{
		{"all good", path, validate.Item{ColorProfile: "AdobeRGB1998", ResolutionDPI: "400"}, strict, nil},
		{"missing profile and dpi", path, validate.Item{}, validate.DefaultMasterPolicy(),
			[]string{"x:manifest.color_profile.required", "x:manifest.resolution_dpi.required"}},
		{"dpi abc", path, validate.Item{ColorProfile: "sRGB", ResolutionDPI: "abc"}, validate.DefaultMasterPolicy(),
			[]string{"x:manifest.resolution_dpi.numeric"}},
		{"dpi below policy", path, validate.Item{ColorProfile: "sRGB", ResolutionDPI: "150"}, validate.DefaultMasterPolicy(),
			[]string{"x:manifest.resolution_dpi.min"}},
		{"dpi disagrees with file", path, validate.Item{ColorProfile: "sRGB", ResolutionDPI: "600"}, validate.DefaultMasterPolicy(),
			[]string{"x:manifest.resolution_dpi.matches_file"}},
		{"profile disagrees with ICC", path, validate.Item{ColorProfile: "sRGB IEC61966-2.1", ResolutionDPI: "400"}, strict,
			[]string{"x:manifest.color_profile.matches_file"}},
		{"no ICC where required, no resolution in file", noICC, validate.Item{ColorProfile: "sRGB", ResolutionDPI: "400"}, strict,
			[]string{"x:manifest.color_profile.embedded", "x:manifest.resolution_dpi.matches_file"}},
	}
	for _, tc := range cases {
		it := tc.item
		it.ObjectID, it.Kind, it.Path = "x", "tiff", filepath.Base(tc.path)
		it.SHA256 = sha
		if tc.path == noICC {
			it.SHA256 = shaNoICC
		}
		_, err := validate.CheckMaster(context.Background(), tc.path, &it, tc.policy)
		var se *validate.StageError
		if err != nil && (!errors.As(err, &se) || se.Stage != validate.StageRules) {
			t.Errorf("%s: %v is not a rules-stage error", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, codes(err)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestFixityAndFormat(t *testing.T) {
	t.Parallel()
	path, sha := master(t, "m.tif", grey(8, 8))
	ctx := context.Background()
	pol := validate.DefaultMasterPolicy()
	ok := validate.Item{ObjectID: "x", ColorProfile: "sRGB", ResolutionDPI: "400", SHA256: sha}

	bad := ok
	bad.SHA256 = strings.Repeat("0", 64)
	rep, err := validate.CheckMaster(ctx, path, &bad, pol)
	var fe *validate.FixityError
	if !errors.As(err, &fe) || fe.Have != sha || rep.SHA256 != sha {
		t.Errorf("sha mismatch: %v; report digest %s want %s", err, rep.SHA256, sha)
	}
	sized := ok
	sized.Size = 5
	if _, err := validate.CheckMaster(ctx, path, &sized, pol); !errors.As(err, &fe) || fe.Field != "size" {
		t.Errorf("size mismatch: %v", err)
	}
	declared := ok
	declared.Format = "image/jp2"
	var fmtErr *validate.FormatError
	if _, err := validate.CheckMaster(ctx, path, &declared, pol); !errors.As(err, &fmtErr) || fmtErr.Source != "manifest" {
		t.Errorf("declared format conflict: %v", err)
	}
	jpg := filepath.Join(t.TempDir(), "m.jpg")
	b, _ := os.ReadFile(path)
	os.WriteFile(jpg, b, 0o644)
	if _, err := validate.CheckMaster(ctx, jpg, nil, pol); !errors.As(err, &fmtErr) || fmtErr.Source != "extension" {
		t.Errorf("extension conflict: %v", err)
	}
	png := filepath.Join(t.TempDir(), "m.tif")
	os.WriteFile(png, []byte("\x89PNG\r\n\x1a\n0000000000"), 0o644)
	if _, err := validate.CheckMaster(ctx, png, nil, pol); !errors.As(err, &fmtErr) {
		t.Errorf("PNG named .tif: %v", err)
	}
	if _, err := validate.CheckMaster(ctx, filepath.Join(t.TempDir(), "missing.tif"), nil, pol); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := validate.CheckMaster(ctx, t.TempDir(), nil, pol); !errors.Is(err, validate.ErrNotRegular) {
		t.Errorf("directory: %v", err)
	}
}

func TestPolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(testCorpusOrSkip(t, "good"), "libtiff-custom_dir_EXIF_GPS.tiff")
	pol := validate.DefaultMasterPolicy()
	rep, err := validate.CheckMaster(ctx, path, nil, pol)
	if err != nil || len(rep.Warnings) == 0 {
		t.Fatalf("tolerated private tags: %v, warnings %v", err, rep.Warnings)
	}
	pol.PrivateTags = "reject"
	var pe *validate.PolicyError
	if _, err := validate.CheckMaster(ctx, path, nil, pol); !errors.As(err, &pe) || pe.Code != "policy.private-tag" {
		t.Errorf("rejected private tags: %v", err)
	}
	// Undecodable = reject: see TestUnknownCompressionMaster (the corpus's
	// ThunderScan file, used here before, is decoded now and refused as short).
	if err := (validate.MasterPolicy{}).Validate(); err == nil {
		t.Error("zero policy validated")
	}
}

// TestObjectIDsCannotPoseAsMessages: "inv#1" would be message 1 of the
// interchange "inv" in the ledger.
func TestObjectIDsCannotPoseAsMessages(t *testing.T) {
	t.Parallel()
	js := `{"batch_id": "b1", "submitter": "s", "items": [
	  {"object_id": "inv#1", "kind": "tiff", "path": "a.tif", "sha256": "` + strings.Repeat("a", 64) + `"}]}`
	m, err := validate.ParseManifest([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Check(t.TempDir(), false); err == nil || !strings.Contains(err.Error(), "separates an interchange from its message references") {
		t.Fatalf("object id with '#': %v", err)
	}
}

// TestManifestDuplicateKeysAreRefused: a manifest with "items" twice was
// read, silently keeping the last list (encoding/json keeps the last of
// a repeated key). Every key written twice in one object, at any depth,
// is now a problem naming the key, where it is and where it was first.
func TestManifestDuplicateKeysAreRefused(t *testing.T) {
	t.Parallel()
	sha := strings.Repeat("a", 64)
	item := func(id string) string {
		return `{"object_id": "` + id + `", "kind": "tiff", "path": "` + id + `.tif", "sha256": "` + sha + `", "resolution_dpi": 400}`
	}
	cases := []struct {
		name, js string
		want     []string // codes
		says     []string // in the message
	}{
		{"items twice", `{"batch_id": "b1", "submitter": "s", "items": [` + item("a") + `],
 "items": [` + item("b") + `]}`, []string{":manifest.items.unique_key"},
			[]string{`manifest: items: line 2, column 2: the key "items" appears twice in the manifest (first at line 1, column 38)`}},
		{"batch_id twice", `{"batch_id": "b1", "batch_id": "b2", "submitter": "s", "items": [` + item("a") + `]}`,
			[]string{":manifest.batch_id.unique_key"}, []string{`"batch_id" appears twice`}},
		{"an item's sha256 twice", `{"batch_id": "b1", "submitter": "s", "items": [` + item("a") + `, {"object_id": "c", "kind": "tiff", "path": "c.tif", "sha256": "` + sha + `", "sha256": "` + strings.Repeat("b", 64) + `"}]}`,
			[]string{"c:manifest.sha256.unique_key"}, []string{`c: sha256: line 1, column `, `appears twice in items[1]`}},
		{"deep in an unknown field", `{"batch_id": "b1", "submitter": "s", "items": [{"object_id": "a", "kind": "tiff", "path": "a.tif", "sha256": "` + sha + `", "resolution_dpi": 400, "x": [{"k": 1, "k": 2}]}]}`,
			[]string{"a:manifest.k.unique_key", "a:manifest.x.known"}, []string{`appears twice in items[0].x[0]`}},
		{"the same name in two objects is fine", `{"batch_id": "b1", "submitter": "s", "items": [` + item("a") + `, ` + item("b") + `]}`, nil, nil},
	}
	for _, tc := range cases {
		m, err := validate.ParseManifest([]byte(tc.js))
		if m == nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, codes(err)); diff != "" {
			t.Errorf("%s: problems (-want +got):\n%s", tc.name, diff)
		}
		for _, w := range tc.says {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: lacks %q:\n%v", tc.name, w, err)
			}
		}
	}
	// Through ReadManifestFile, as submit reads it: refused.
	path := filepath.Join(t.TempDir(), "manifest.json")
	os.WriteFile(path, []byte(cases[0].js), 0o644)
	if _, _, err := validate.ReadManifestFile(path); err == nil || !strings.Contains(err.Error(), `the key "items" appears twice`) {
		t.Errorf("ReadManifestFile: %v", err)
	}
}
