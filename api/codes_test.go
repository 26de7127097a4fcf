package api_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite docs/codes.md from the catalogue")

// sourceCodes reads the code literals of the non-test sources: every
// "family.name" string, and the EDIFACT cause names (edifact.<name>).
func sourceCodes(t *testing.T) (codes map[string]string, text string) {
	t.Helper()
	root := testenv.RepoRoot(t)
	literal := regexp.MustCompile(`"((?:tiff|edifact|fixity|io|file|format|policy|limit|task|registry|manifest|routing|ledger|broker)\.[a-z0-9_.-]*)"`)
	cause := regexp.MustCompile(`\{Err\w+, "([a-z0-9-]+)"\}`)
	fileName := regexp.MustCompile(`\.(db|json|csv|edi|tif|xml)$`)
	codes = map[string]string{}
	var all strings.Builder
	for _, dir := range []string{"tiff", "validate", "edifact", "ingest", "premis", "api", "cmd/lazaret"} {
		files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, "codes.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
			rel, _ := filepath.Rel(root, f)
			for _, m := range literal.FindAllStringSubmatch(string(b), -1) {
				if !fileName.MatchString(m[1]) {
					codes[m[1]] = rel
				}
			}
			if strings.HasSuffix(f, filepath.Join("edifact", "errors.go")) {
				for _, m := range cause.FindAllStringSubmatch(string(b), -1) {
					codes["edifact."+m[1]] = rel
				}
			}
		}
	}
	return codes, all.String()
}

// TestCodesCatalogue: every code in the source has help, and no entry of
// the catalogue names a code the source no longer has.
func TestCodesCatalogue(t *testing.T) {
	codes, text := sourceCodes(t)
	if len(codes) < 80 {
		t.Fatalf("%d codes found in the source: the scan is broken", len(codes))
	}
	for code, file := range codes {
		if h, ok := api.LookupCode(code); !ok || h.Meaning == "" || h.Cause == "" || h.Action == "" {
			t.Errorf("%s (%s) has no entry in api/codes.go's catalogue", code, file)
		}
	}
	for _, h := range api.Codes() {
		if h.Family || h.Built {
			continue
		}
		_, inCauses := codes[h.Code]
		if !inCauses && !strings.Contains(text, `"`+h.Code+`"`) {
			t.Errorf("catalogue entry %s: no such code in the source (stale, or mark it Built)", h.Code)
		}
	}
	if h, ok := api.LookupCode("manifest.sha256.len"); !ok || h.Doc != "docs/codes.md#manifest-family" {
		t.Errorf("a family member: %+v", h)
	}
	if h, _ := api.LookupCode("tiff.ifd-loop"); h.Doc != "docs/codes.md#tiff-ifd-loop" {
		t.Errorf("tiff.ifd-loop: %+v", h)
	}
}

// TestCodesDoc: docs/codes.md is the catalogue, as generated.
func TestCodesDoc(t *testing.T) {
	var b bytes.Buffer
	if err := writeCodesDoc(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testenv.RepoRoot(t), "docs", "codes.md")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./api -run TestCodesDoc -update)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("docs/codes.md is not the catalogue (-file +catalogue); regenerate with go test ./api -run TestCodesDoc -update:\n%s", diff)
	}
}

// writeCodesDoc writes docs/codes.md from the catalogue: a section per
// code, under the anchor its Doc link names.
func writeCodesDoc(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Failure and warning codes\n\n")
	b.WriteString("Generated from the catalogue in `api/codes.go` by `go test ./api -run TestCodesDoc -update`; do not edit by hand.\n")
	b.WriteString("Every code Lazaret records (the `code` of a failure in `dlq|quarantine|hold ls` and `show`, in the API and in the\n")
	b.WriteString("PREMIS export) or warns with has a section: what it means, what likely caused it, what to do.\n")
	b.WriteString("A family entry (a code ending in `.` or `-`) covers the codes built from it that have no entry of their own.\n\n")
	groups := map[string][]api.CodeHelp{}
	var order []string
	for _, h := range api.Codes() {
		g, _, dotted := strings.Cut(h.Code, ".")
		if !dotted {
			g = "other"
		}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], h)
	}
	for _, g := range order {
		fmt.Fprintf(&b, "- [%s](#group-%s)\n", g, g)
	}
	for _, g := range order {
		fmt.Fprintf(&b, "\n<a id=\"group-%s\"></a>\n## %s\n", g, g)
		for _, h := range groups[g] {
			name := h.Code
			if h.Family {
				name += "…"
			}
			fmt.Fprintf(&b, "\n<a id=\"%s\"></a>\n### `%s`\n\n%s\n\n- **Likely cause:** %s\n- **What to do:** %s\n", docAnchor(h), name, h.Meaning, h.Cause, h.Action)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// docAnchor is the id of h's section: what its Doc link points at.
func docAnchor(h api.CodeHelp) string {
	_, a, _ := strings.Cut(h.Doc, "#")
	return a
}
