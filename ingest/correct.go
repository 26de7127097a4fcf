package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/lazaret/lazaret/validate"
)

// Fields an operator may not correct on replay: they name the item, not
// describe it (a corrected file is ReplayOptions.File).
var uncorrectable = map[string]string{
	"object_id": "the object id names the item: submit it as a new item instead",
	"kind":      "the kind decides the lane: submit it as a new item instead",
	"path":      "a corrected file is given with --file (\"file\" in the API)",
}

// correctItem applies manifest field corrections (json name → value) to
// env's item and checks the result with the manifest's rules, as if the
// item had been submitted so. A corrected sha256 or size becomes what the
// replay's fixity check expects. It returns a note of what changed.
func correctItem(env *Envelope, set map[string]string, hardlinks validate.HardlinkRoots) (string, error) {
	if len(set) == 0 {
		return "", nil
	}
	known := itemFields()
	var raw map[string]json.RawMessage
	b, err := json.Marshal(env.Item)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return "", err
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	var notes []string
	for _, k := range names {
		v := set[k]
		if why, ok := uncorrectable[k]; ok {
			return "", fmt.Errorf("--set %s: %s", k, why)
		}
		kind, ok := known[k]
		if !ok {
			return "", fmt.Errorf("--set %s: no such manifest field (fields: %s)", k, strings.Join(sortedKeys(known), ", "))
		}
		switch {
		case kind == reflect.Int64:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return "", fmt.Errorf("--set %s=%q: want a whole number", k, v)
			}
			raw[k] = json.RawMessage(strconv.FormatInt(n, 10))
		case v == "":
			delete(raw, k) // cleared
		default:
			q, _ := json.Marshal(v)
			raw[k] = q
		}
		notes = append(notes, fmt.Sprintf("%s=%q", k, v))
	}
	b, err = json.Marshal(raw)
	if err != nil {
		return "", err
	}
	var it validate.Item
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&it); err != nil {
		return "", fmt.Errorf("corrected item: %w", err)
	}
	// The entry is checked against the file the replay will read: a
	// corrected file (--file) stands elsewhere than the manifest's path,
	// which the item keeps as its name in the batch.
	dir, checked := env.Root, it
	switch {
	case dir == "":
		dir, checked.Path = filepath.Dir(env.Path), filepath.Base(env.Path)
	case env.Rel != "":
		checked.Path = env.Rel
	}
	m := &validate.Manifest{BatchID: env.BatchID, Submitter: env.Submitter, Items: []validate.Item{checked}}
	if m.Submitter == "" {
		m.Submitter = "operator"
	}
	if err := m.Check(dir, hardlinks.Allow(dir)); err != nil {
		return "", fmt.Errorf("the corrected item breaks the manifest's rules: %w", err)
	}
	if k, ok := validate.KindNamed(it.Kind); ok && k.Fields != nil {
		// The kind's field rules that need no file (a master's
		// color_profile given, resolution_dpi a number), for the fields
		// corrected; the rules against the file run when the replay is
		// validated.
		var bad []error
		for _, err := range unjoin(k.Fields(it)) {
			var fe *validate.FieldError
			if errors.As(err, &fe) {
				if _, corrected := set[fe.Field]; corrected {
					bad = append(bad, err)
				}
			}
		}
		if len(bad) > 0 {
			return "", fmt.Errorf("the corrected item breaks the manifest's rules: %w", errors.Join(bad...))
		}
	}
	env.Item = it
	if it.SHA256 != "" {
		env.SHA256 = it.SHA256
	}
	if it.Size > 0 {
		env.Size = it.Size
	}
	return "corrected " + strings.Join(notes, ", "), nil
}

// unjoin lists the errors joined in err (errors.Join), or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// itemFields are the JSON names of validate.Item's fields and their kinds.
func itemFields() map[string]reflect.Kind {
	out := map[string]reflect.Kind{}
	t := reflect.TypeFor[validate.Item]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = f.Type.Kind()
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
