package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
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
// spelling) and in which no object, at any depth, holds a key twice.
func checkKeys(b []byte, fields []string) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil {
		return fmt.Errorf("want a JSON object: %v", err)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("want a JSON object, not %v", tok)
	}
	if err := walkObject(d, "", fields); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("want one JSON object, found more after it")
	}
	return nil
}

// walkObject reads the rest of an object whose '{' was read; at the top
// (fields non-nil) every key must be one of fields.
func walkObject(d *json.Decoder, at string, fields []string) error {
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		key := tok.(string) // the decoder hands an object's keys over as strings
		path := key
		if at != "" {
			path = at + "." + key
		}
		if seen[key] {
			return fmt.Errorf("field %q appears twice", path)
		}
		seen[key] = true
		if fields != nil {
			if !slices.Contains(fields, key) {
				if near := nearest(key, fields); near != "" {
					return fmt.Errorf("unknown field %q (did you mean %q?); known fields: %s", path, near, strings.Join(fields, ", "))
				}
				return fmt.Errorf("unknown field %q; known fields: %s", path, strings.Join(fields, ", "))
			}
		}
		if err := walkValue(d, path); err != nil {
			return err
		}
	}
	_, err := d.Token() // '}'
	return err
}

// walkValue reads one value, checking the objects within it for repeated keys.
func walkValue(d *json.Decoder, at string) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return walkObject(d, at, nil)
	case json.Delim('['):
		for i := 0; d.More(); i++ {
			if err := walkValue(d, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		_, err := d.Token() // ']'
		return err
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
