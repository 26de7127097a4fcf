package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/lazaret/lazaret/validate"
)

// errBody is a request body the API does not take: an unknown, misspelt or
// repeated field, a field in another case, or anything but one JSON object.
var errBody = errors.New("request body refused")

// decodeBody reads one JSON object from r into v, a pointer to a struct,
// strictly: every key must be one of v's json names spelt exactly (encoding/json
// alone matches names case-insensitively and drops the unknown), no key may
// come twice at any depth (encoding/json keeps the last), and nothing may
// follow the object. So a misspelt dryRun for dry_run is refused before
// anything is recorded, instead of performing the real action it was meant
// to preview. The error names the field.
func decodeBody(r io.Reader, v any) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%w: %v", errBody, err)
	}
	if err := checkKeys(b, fieldsOf(v)); err != nil {
		return fmt.Errorf("%w: %v", errBody, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", errBody, err)
	}
	return nil
}

// fieldsOf is the json names of the struct v points to.
func fieldsOf(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// checkKeys reads b as one JSON object whose keys are among fields (exact
// spelling) and in which no object, at any depth, holds a key twice
// (validate.DuplicateKeys, which holds manifests to the same).
func checkKeys(b []byte, fields []string) error {
	d := json.NewDecoder(bytes.NewReader(b))
	var top map[string]json.RawMessage
	if err := d.Decode(&top); err != nil || top == nil {
		return fmt.Errorf("want a JSON object: %v", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("want one JSON object, found more after it")
	}
	if dups := validate.DuplicateKeys(b); len(dups) > 0 {
		return fmt.Errorf("field %q appears twice", dups[0].Name())
	}
	keys := slices.Sorted(maps.Keys(top))
	for _, key := range keys {
		if slices.Contains(fields, key) {
			continue
		}
		if near := nearest(key, fields); near != "" {
			return fmt.Errorf("unknown field %q (did you mean %q?); known fields: %s", key, near, strings.Join(fields, ", "))
		}
		return fmt.Errorf("unknown field %q; known fields: %s", key, strings.Join(fields, ", "))
	}
	return nil
}

// nearest is the field key was most likely meant to be: the same letters
// without case, '_' and '-' (dryRun, DRY_RUN, dry-run for dry_run).
func nearest(key string, fields []string) string {
	fold := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '_' || r == '-' {
				return -1
			}
			return r
		}, strings.ToLower(s))
	}
	k := fold(key)
	for _, f := range fields {
		if fold(f) == k {
			return f
		}
	}
	return ""
}
