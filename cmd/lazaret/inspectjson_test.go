package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
)

// encodingJSON is r as json.Encoder writes it: what inspect --json wrote
// before appendJSON.
func encodingJSON(t testing.TB, r *inspectResult) []byte {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestInspectJSONIsEncodingJSON: appendJSON writes every inspectResult as
// encoding/json does, byte for byte: empty and set fields, nil and empty
// warnings, and strings that need escapes.
func TestInspectJSONIsEncodingJSON(t *testing.T) {
	t.Parallel()
	off, page, zero, neg := int64(311), 3, int64(0), -1
	for _, r := range []inspectResult{
		{},
		{Warnings: []tiff.Warning{}},
		{File: "/tmp/a.edi", Kind: "edifact", Verdict: "accept", Offset: &off, Segment: 1, Tag: "UNH", MessageRef: "17", MessageType: "IFTMIN",
			SHA256: "9a6f0e6e16bab61619f508c84d861675ef356dad0a612bf8cfe78063d59cbf82", Size: 52428953, Warnings: []tiff.Warning{}},
		{File: "m.tif", ObjectID: "obj-1", Kind: "tiff", Verdict: "quarantine", Class: "semantic", Code: "policy.dpi", Message: "page 3: 72 dpi < 300",
			Offset: &zero, Page: &page, Tag: "XResolution", PUID: "fmt/353", Pages: 4, Size: -2,
			Warnings: []tiff.Warning{{Code: "w", Message: "m"}, {Code: "x", Message: "y", Page: &neg, Path: "p", Offset: &off}}},
		{File: "a <b> & \"c\"\\d\n\t\r\b\f\x00\x1f\x7f", Message: "Zürich 北京 \u2028\u2029 \xff\xfe bad", Code: "é",
			Segment: -5, Element: 1 << 40, Component: 2, MessageRef: "<ref>", Interchange: 3, MessageType: "&",
			Warnings: []tiff.Warning{{Code: "<", Message: "\u202e", Path: "\x01"}}},
	} {
		got, want := r.appendJSON(nil), encodingJSON(t, &r)
		if !bytes.Equal(got, want) {
			t.Errorf("appendJSON:\n%s\nencoding/json:\n%s", got, want)
		}
	}
}

// TestJSONWriterRemembers: a jsonWriter that has quoted a long string
// before writes it again as encoding/json does, whatever came in between,
// and says whether a line holds a byte clean refuses.
func TestJSONWriterRemembers(t *testing.T) {
	t.Parallel()
	off, other := int64(7), int64(-1234567)
	long := strings.Repeat("/tmp/lazaret-bench-50mb.edi", 2)
	rs := []inspectResult{
		{File: long, Kind: "edifact", Verdict: "accept", Offset: &off, MessageRef: "1", SHA256: strings.Repeat("9a", 32),
			Warnings: []tiff.Warning{{Code: "edifact.directory.unknown", Message: "no message directory for VERMAS:D:16A:UN; only the envelope was checked"}}},
		{File: long + " <&> \"x\" é \u202e \x1b[31m", Message: strings.Repeat("Zürich ", 5)},
		{File: long[:30], Message: strings.Repeat("\xff", 30), Code: "\u2028 and a line separator"},
		// A warning's offset is written from the line's digits when it is
		// the line's, and only then.
		{File: long, Offset: &off, Warnings: []tiff.Warning{{Code: "c", Offset: &off}}},
		{File: long, Warnings: []tiff.Warning{{Code: "c", Offset: &off}}},
		{File: long, Offset: &other, Warnings: []tiff.Warning{{Code: "c", Offset: &off}, {Code: "d", Offset: &other}}},
	}
	var w jsonWriter
	for round := range 3 {
		for i := range 2 * len(rs) { // each line twice: the second as the first came out
			r := &rs[(i/2+round)%len(rs)]
			w.dirty = false
			got, want := w.append(nil, r), encodingJSON(t, r)
			if !bytes.Equal(got, want) {
				t.Errorf("round %d: jsonWriter:\n%s\nencoding/json:\n%s", round, got, want)
			}
			if w.dirty != !clean(got) {
				t.Errorf("round %d: dirty %v for %q", round, w.dirty, got)
			}
		}
	}
}

// TestJSONWriterSeesEveryField: a jsonWriter that copies the fields a line
// shares with the line before writes a line that differs from the one
// before in any one field, of its own or of its warnings, as
// encoding/json does. A field added to inspectResult and not to what
// tells two lines apart fails here.
func TestJSONWriterSeesEveryField(t *testing.T) {
	t.Parallel()
	var base inspectResult
	n := 0
	fill(reflect.ValueOf(&base).Elem(), &n)
	var w jsonWriter
	rv := reflect.ValueOf(&base).Elem()
	for i := range rv.NumField() {
		if !rv.Type().Field(i).IsExported() {
			continue
		}
		r := base
		r.Warnings = append([]tiff.Warning(nil), base.Warnings...)
		fill(reflect.ValueOf(&r).Elem().Field(i), &n)
		for _, line := range []*inspectResult{&base, &r} {
			got, want := w.append(nil, line), encodingJSON(t, line)
			if !bytes.Equal(got, want) {
				t.Errorf("field %s changed: jsonWriter:\n%s\nencoding/json:\n%s", rv.Type().Field(i).Name, got, want)
			}
		}
	}
}

// FuzzInspectJSON: any strings, numbers and warnings come out of
// appendJSON as encoding/json writes them.
func FuzzInspectJSON(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	seeds.Add("f.edi", "7", "msg", "code", int64(12), 3, true, "w", "")
	seeds.Add("<&>", "\xff", "\u2028", "\"\\", int64(-1), -2, false, "\x00", "p")
	f.Fuzz(func(t *testing.T, file, ref, msg, code string, off int64, seg int, withOffset bool, wmsg, wpath string) {
		r := inspectResult{File: file, ObjectID: ref, Kind: code, Verdict: msg, Class: ref, Code: code, Message: msg, Tag: ref,
			Segment: seg, Element: seg * 2, Component: -seg, MessageRef: ref, MessageType: code, PUID: file, SHA256: msg, Size: off, Pages: seg,
			Warnings: []tiff.Warning{{Code: code, Message: wmsg, Path: wpath}}}
		if withOffset {
			r.Offset, r.Page, r.Warnings[0].Offset, r.Warnings[0].Page = &off, &seg, &off, &seg
		}
		got, want := r.appendJSON(nil), encodingJSON(t, &r)
		if !bytes.Equal(got, want) {
			t.Errorf("appendJSON:\n%s\nencoding/json:\n%s", got, want)
		}
	})
}

// TestInspectJSONCoversEveryField: every field of inspectResult and of
// its warnings, each set to a value of its own, comes out of appendJSON
// as encoding/json writes it. A field added to the struct and not to
// appendJSON fails here, omitempty or not, without anyone writing a case.
func TestInspectJSONCoversEveryField(t *testing.T) {
	t.Parallel()
	var r inspectResult
	n := 0
	fill(reflect.ValueOf(&r).Elem(), &n)
	got, want := r.appendJSON(nil), encodingJSON(t, &r)
	if !bytes.Equal(got, want) {
		t.Errorf("every field set:\nappendJSON:\n%s\nencoding/json:\n%s", got, want)
	}
}

// fill sets every settable field of v, recursively, to a non-zero value
// told apart from the others by *n.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d", *n))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), n)
		fill(v.Index(1), n)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	}
}
