package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// keyTracker finds keys that appear twice in one JSON object, at any
// depth, from a json.Decoder's token stream. encoding/json keeps the last
// of them silently: a manifest with "items" twice would submit the second
// list and never say the first was there. Feed it every token with the
// decoder's offset before the token; it keeps only the open objects' keys,
// so its memory is bounded by the deepest object, not the document.
type keyTracker struct {
	stack []keyFrame
	dups  []dupKey
}

type keyFrame struct {
	object  bool             // an object (else an array)
	wantKey bool             // the next string is a key
	key     string           // the key whose value is being read
	index   int              // the array element being read (0-based)
	seen    map[string]int64 // keys met so far, with their offsets
}

// dupKey: key appeared twice in the object at path; off and first are the
// offsets the decoder reported before each (keyStart finds the key).
type dupKey struct {
	path       string
	key        string
	off, first int64
	depth      int // 1: a top-level key
	item       int // the items element it is in (0-based), -1 outside the items
}

// maxDupKeys bounds what is kept of a hostile document made of repeats.
const maxDupKeys = 100

// token takes the next token tok, which the decoder returned after offset off.
func (k *keyTracker) token(tok json.Token, off int64) {
	var top *keyFrame
	if n := len(k.stack); n > 0 {
		top = &k.stack[n-1]
	}
	if s, ok := tok.(string); ok && top != nil && top.object && top.wantKey {
		if first, dup := top.seen[s]; dup {
			if len(k.dups) < maxDupKeys {
				k.dups = append(k.dups, dupKey{path: k.path(), key: s, off: off, first: first, depth: len(k.stack), item: k.item()})
			}
		} else {
			top.seen[s] = off
		}
		top.key, top.wantKey = s, false
		return
	}
	if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
		if len(k.stack) > 0 {
			k.stack = k.stack[:len(k.stack)-1]
		}
		return
	}
	// A value starts in top: the next one is a key (object) or the next
	// element (array).
	if top != nil {
		if top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	switch tok {
	case json.Delim('{'):
		k.stack = append(k.stack, keyFrame{object: true, wantKey: true, seen: map[string]int64{}})
	case json.Delim('['):
		k.stack = append(k.stack, keyFrame{index: -1})
	}
}

// path names the object being read, as items[2].x: "" at the top.
func (k *keyTracker) path() string {
	var b strings.Builder
	for i, f := range k.stack[:len(k.stack)-1] {
		if f.object {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		} else {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	return b.String()
}

// item is the index in the top-level "items" list the reader is in, -1
// outside it.
func (k *keyTracker) item() int {
	if len(k.stack) >= 3 && k.stack[0].object && k.stack[0].key == "items" && !k.stack[1].object {
		return k.stack[1].index
	}
	return -1
}

// errors turns the duplicates into field errors: rule "unique_key",
// naming the key, the object it is in, and both places.
func (k *keyTracker) errors(b []byte, name func(item int) string) []error {
	var errs []error
	for _, d := range k.dups {
		line, col := lineColumn(b, keyStart(b, d.off))
		fl, fc := lineColumn(b, keyStart(b, d.first))
		in := "the manifest"
		if d.path != "" {
			in = d.path
		}
		id := ""
		if d.item >= 0 {
			id = name(d.item)
		}
		errs = append(errs, &FieldError{ObjectID: id, Field: d.key, Rule: "unique_key", Value: d.key,
			Message: fmt.Sprintf("line %d, column %d: the key %q appears twice in %s (first at line %d, column %d): a JSON reader would silently keep only the last",
				line, col, d.key, in, fl, fc)})
	}
	return errs
}

// track feeds k every token of b, up to the end or the first syntax error.
func (k *keyTracker) track(b []byte) {
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return
		}
		k.token(tok, off)
	}
}

// duplicateKeys is one *FieldError per key that appears twice in one
// object of b (a manifest that parses), naming m's items.
func duplicateKeys(b []byte, m *Manifest) []error {
	var k keyTracker
	k.track(b)
	return k.errors(b, func(i int) string { return itemName(m, i) })
}

// DuplicateKey is a key written twice in one object of a JSON document:
// Path names the object ("" the top, "set", "items[2]"); Offset is where
// the second one starts.
type DuplicateKey struct {
	Path, Key string
	Offset    int64
}

// Name is the key with the object it is in: "set.color_profile".
func (d DuplicateKey) Name() string {
	if d.Path == "" {
		return d.Key
	}
	return d.Path + "." + d.Key
}

// DuplicateKeys lists the keys b writes twice in one object, at any depth,
// in document order (at most 100): what encoding/json silently reads as
// the last of them. The API's request bodies are held to it as manifests
// are.
func DuplicateKeys(b []byte) []DuplicateKey {
	var k keyTracker
	k.track(b)
	out := make([]DuplicateKey, len(k.dups))
	for i, d := range k.dups {
		out[i] = DuplicateKey{Path: d.path, Key: d.key, Offset: keyStart(b, d.off)}
	}
	return out
}
