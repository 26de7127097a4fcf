package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"
	"github.com/lazaret/lazaret/tiff"
)

// Manifest is a submitted batch: who sent it and the items in it.
type Manifest struct {
	BatchID   string `json:"batch_id" validate:"required,max=128,printascii,excludesall=/\\"`
	Submitter string `json:"submitter" validate:"required,max=256"`
	Items     []Item `json:"items" validate:"required,min=1,max=100000,dive"`
}

// Item is one object in a batch. Path is relative to the manifest's folder.
type Item struct {
	// ObjectID may not contain '#': it separates an interchange from its
	// message references in message object ids (MessageObjectID), so an
	// item "inv#1" could otherwise be message 1 of interchange "inv".
	ObjectID      string  `json:"object_id" validate:"required,max=256,printascii,excludesall=#"`
	Kind          string  `json:"kind" validate:"required,kind"`
	Path          string  `json:"path" validate:"required,max=4096"`
	SHA256        string  `json:"sha256" validate:"required,len=64,hexadecimal,lowercase"`
	Size          int64   `json:"size,omitempty" validate:"gte=0"`
	Format        string  `json:"format,omitempty" validate:"max=64"`
	ColorProfile  string  `json:"color_profile,omitempty" validate:"max=256"`
	ResolutionDPI RawText `json:"resolution_dpi,omitempty"`
}

// RawText keeps a JSON scalar as the text it was written as, so that
// "resolution_dpi": "abc" and "resolution_dpi": 400 both reach the rules and
// the rule, not the JSON decoder, says what is wrong.
type RawText string

// UnmarshalJSON accepts a JSON string, number or null.
func (t *RawText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*t = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = RawText(s)
	case len(b) > 0 && (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')):
		*t = RawText(b)
	default:
		return fmt.Errorf("want a number or a string, got %s", b)
	}
	return nil
}

// MaxManifestBytes caps a manifest file.
const MaxManifestBytes = 64 << 20

var validate = newValidator()

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	// kind: the name of a registered Kind.
	_ = v.RegisterValidation("kind", func(fl validator.FieldLevel) bool {
		_, ok := KindNamed(fl.Field().String())
		return ok
	})
	return v
}

// ReadManifest reads and checks a manifest file: JSON shape, required
// fields, digests, kinds, unique object ids, and every path inside the
// manifest's folder and there. A UTF-8 byte-order mark (what Notepad and
// Excel write) is skipped. All problems come back together (errors.Join of
// *FieldError, each naming its item's object id), except that JSON which
// does not parse is one *ManifestSyntaxError with its line and column.
// Per-item content rules (colour profile, resolution) are not checked
// here: they belong to the item's validation and route it to quarantine
// without refusing the batch.
//
// The manifest is opened as an item is (see Open): src names it beneath
// an ingest root, or is SourceOf its path, confined to its own folder;
// either way a symbolic link, a hard link (unless src.Hardlinks) or
// anything but a regular file is refused before a byte is read. Every
// failure to open or read it wraps ErrManifestUnreadable, so a caller that
// answers strangers can refuse all of them alike. src.Hardlinks applies to
// the items' files too: they lie beneath the same root.
func ReadManifest(src Source) (*Manifest, string, error) {
	path := src.String()
	f, size, err := Open(src)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrManifestUnreadable, err)
	}
	defer f.Close()
	// Read into a buffer of the size seen at open (io.ReadAll would double
	// its way there: 32 MiB and the copies before for a 20 MiB manifest).
	var buf bytes.Buffer
	buf.Grow(int(min(size, MaxManifestBytes+1)) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxManifestBytes+1)); err != nil {
		return nil, "", fmt.Errorf("%w: %s: %w", ErrManifestUnreadable, path, err)
	}
	b := buf.Bytes()
	if len(b) > MaxManifestBytes {
		return nil, "", fmt.Errorf("manifest %s is larger than %d bytes", path, MaxManifestBytes)
	}
	m, err := ParseManifest(b)
	dir := filepath.Dir(path)
	if m == nil {
		return nil, dir, err
	}
	return m, dir, errors.Join(err, m.Check(dir, src.Hardlinks))
}

// ErrManifestUnreadable: the manifest could not be opened or read as a
// regular file in its place (missing, a link, not permitted, not a file).
var ErrManifestUnreadable = errors.New("manifest not readable")

// ManifestSyntaxError: the manifest is not one JSON object. Offset is the
// 0-based byte offset (after a byte-order mark), Line and Column are
// 1-based, the column counted in characters.
type ManifestSyntaxError struct {
	Offset       int64
	Line, Column int
	Err          error
}

func (e *ManifestSyntaxError) Error() string {
	return fmt.Sprintf("manifest: line %d, column %d (byte %d): %v", e.Line, e.Column, e.Offset, e.Err)
}

func (e *ManifestSyntaxError) Unwrap() error { return e.Err }

// lineColumn turns a byte offset in b into a 1-based line and column.
func lineColumn(b []byte, off int64) (line, col int) {
	off = max(0, min(off, int64(len(b))))
	before := b[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[lineStart:]) + 1
}

func syntaxError(b []byte, off int64, err error) *ManifestSyntaxError {
	line, col := lineColumn(b, off)
	return &ManifestSyntaxError{Offset: off, Line: line, Column: col, Err: err}
}

var utf8BOM = []byte("\xef\xbb\xbf")

// ParseManifest decodes a manifest. JSON that does not parse is a
// *ManifestSyntaxError and no manifest. Otherwise the manifest comes back
// with every unknown field, every value of the wrong JSON type and every
// key written twice in one object (at any depth: "items" twice would
// otherwise keep the last list silently; rule unique_key) as a
// *FieldError (naming the item's object id, the key, the line and the
// column), joined: the caller sees them with the other problems, all at
// once.
func ParseManifest(b []byte) (*Manifest, error) {
	b = bytes.TrimPrefix(b, utf8BOM)
	dec := json.NewDecoder(bytes.NewReader(b))
	// Decoding into an empty struct checks the syntax of the whole value
	// and keeps nothing of it (a json.RawMessage would copy the manifest).
	var probe struct{}
	notObject := errors.New("want a JSON object with batch_id, submitter and items")
	start := int64(len(b) - len(bytes.TrimLeft(b, " \t\r\n")))
	if err := dec.Decode(&probe); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			// Offset is after the character at fault: point at it.
			return nil, syntaxError(b, max(se.Offset-1, 0), err)
		case errors.Is(err, io.EOF):
			return nil, syntaxError(b, 0, errors.New("empty: want a JSON object with batch_id, submitter and items"))
		case start < int64(len(b)) && b[start] != '{':
			return nil, syntaxError(b, start, notObject)
		}
		return nil, syntaxError(b, dec.InputOffset(), err)
	}
	if dec.More() {
		off := dec.InputOffset()
		for off < int64(len(b)) && strings.ContainsRune(" \t\r\n", rune(b[off])) {
			off++
		}
		return nil, syntaxError(b, off, errors.New("trailing data after the JSON object"))
	}
	if start >= int64(len(b)) || b[start] != '{' {
		return nil, syntaxError(b, start, notObject)
	}
	spans := itemSpans(b, false)
	// Unmarshal appends to a slice it is given: sized, it grows no copies.
	// (None without items: "items" absent stays nil, as required wants.)
	var m Manifest
	if n := len(spans.items); n > 0 {
		m.Items = make([]Item, 0, n)
	}
	var errs []error
	if err := json.Unmarshal(b, &m); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return nil, syntaxError(b, 0, err)
		}
		// Unmarshal goes on past a type error and reports the first one;
		// its offset is after the value: the position given is the key's.
		field := te.Field
		if i := strings.LastIndexByte(field, '.'); i >= 0 {
			field = field[i+1:]
		}
		line, col := lineColumn(b, itemSpans(b, true).keyOffset(b, te.Offset, field))
		errs = append(errs, &FieldError{ObjectID: spans.objectID(&m, te.Offset), Field: field, Rule: "type", Value: te.Value,
			Message: fmt.Sprintf("line %d, column %d: a JSON %s where a %s is wanted", line, col, te.Value, jsonKind(te.Type))})
	}
	errs = append(errs, spans.unknownFields(b, &m)...)
	errs = append(errs, duplicateKeys(b, &m)...)
	return &m, errors.Join(errs...)
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "list"
	case reflect.Struct:
		return "object"
	}
	return t.String()
}

// manifestSpans is where the manifest's keys and items are in its bytes.
type manifestSpans struct {
	top   []keyAt
	items []itemSpan
}

type keyAt struct {
	name string
	off  int64
}

type itemSpan struct {
	start int64
	keys  []keyAt
}

// itemSpans reads the layout of a manifest that parses: the top-level keys
// and, for each item, where it starts and its keys — with all false only
// the keys that are not item fields (unknownFields needs no others; a
// manifest of 100,000 items would hold 600,000 keys).
func itemSpans(b []byte, all bool) manifestSpans {
	var sp manifestSpans
	dec := json.NewDecoder(bytes.NewReader(b))
	objectKeys := func() []keyAt {
		var keys []keyAt
		for dec.More() {
			off := dec.InputOffset()
			tok, err := dec.Token()
			if err != nil {
				return keys
			}
			name, _ := tok.(string)
			if all || !slices.Contains(itemFields, name) {
				keys = append(keys, keyAt{name, off})
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return keys
			}
		}
		return keys
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return sp
	}
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return sp
		}
		name, _ := tok.(string)
		sp.top = append(sp.top, keyAt{name, off})
		if name != "items" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return sp
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			continue // not a list: the type error says so
		}
		for dec.More() {
			it := itemSpan{start: dec.InputOffset()}
			if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
				return sp
			}
			it.keys = objectKeys()
			if _, err := dec.Token(); err != nil { // '}'
				return sp
			}
			sp.items = append(sp.items, it)
		}
		if _, err := dec.Token(); err != nil { // ']'
			return sp
		}
	}
	return sp
}

// keyStart skips what stands between a decoder's offset and the key that
// follows (white space, a comma).
func keyStart(b []byte, off int64) int64 {
	for off < int64(len(b)) && strings.ContainsRune(" \t\r\n,", rune(b[off])) {
		off++
	}
	return off
}

// keyOffset is where the key name stands in the item (or the top level)
// that holds byte offset off; off itself when it cannot be found.
func (sp manifestSpans) keyOffset(b []byte, off int64, name string) int64 {
	keys := sp.top
	for _, it := range sp.items {
		if it.start <= off {
			keys = it.keys
		}
	}
	found := off
	for _, k := range keys {
		if k.name == name && k.off < off {
			found = k.off
		}
	}
	if found == off {
		return off
	}
	return keyStart(b, found)
}

// objectID names the item at byte offset off: its object id, or its
// 1-based place in the list; "" outside the items.
func (sp manifestSpans) objectID(m *Manifest, off int64) string {
	idx := -1
	for i, it := range sp.items {
		if it.start <= off {
			idx = i
		}
	}
	if idx < 0 {
		return ""
	}
	return itemName(m, idx)
}

// itemName is item i's object id, or "item N" (1-based) without one.
func itemName(m *Manifest, i int) string {
	if i < len(m.Items) && m.Items[i].ObjectID != "" {
		return m.Items[i].ObjectID
	}
	return fmt.Sprintf("item %d", i+1)
}

var (
	manifestFields = jsonFields(reflect.TypeOf(Manifest{}))
	itemFields     = jsonFields(reflect.TypeOf(Item{}))
)

func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// unknownFields is one *FieldError per key the manifest format does not
// have, with the item's object id, the line and the column.
func (sp manifestSpans) unknownFields(b []byte, m *Manifest) []error {
	var errs []error
	check := func(objectID string, keys []keyAt, known []string) {
		for _, k := range keys {
			if slices.Contains(known, k.name) {
				continue
			}
			line, col := lineColumn(b, keyStart(b, k.off))
			errs = append(errs, &FieldError{ObjectID: objectID, Field: k.name, Rule: "known", Value: k.name,
				Message: fmt.Sprintf("line %d, column %d: not a manifest field (the fields are: %s)", line, col, strings.Join(known, ", "))})
		}
	}
	check("", sp.top, manifestFields)
	for i, it := range sp.items {
		check(itemName(m, i), it.keys, itemFields)
	}
	return errs
}

// Check applies the boundary rules to m. dir is the manifest's folder; item
// paths must stay inside it and name a regular file there, with one link
// unless hardlinks (see Source.Hardlinks).
func (m *Manifest) Check(dir string, hardlinks bool) error {
	var errs []error
	if err := validate.Struct(m); err != nil {
		errs = append(errs, fieldErrors(m, err)...)
	}
	root, rootErr := filepath.Abs(dir)
	seen := map[string]int{}
	for i, it := range m.Items {
		if j, dup := seen[it.ObjectID]; dup && it.ObjectID != "" {
			errs = append(errs, &FieldError{ObjectID: it.ObjectID, Field: "object_id", Rule: "unique", Value: it.ObjectID,
				Message: fmt.Sprintf("item %d repeats the object id of item %d (items counted from 1)", i+1, j+1)})
		} else {
			seen[it.ObjectID] = i
		}
		if it.Path == "" {
			continue
		}
		full, err := ResolvePath(dir, it.Path)
		if err != nil {
			errs = append(errs, &FieldError{ObjectID: itemName(m, i), Field: "path", Rule: "inside", Value: it.Path, Message: err.Error()})
			continue
		}
		if rootErr != nil {
			continue
		}
		// The file is opened as a worker opens it, so that a missing or
		// unreadable file is reported now, with the other problems.
		rel, _ := filepath.Rel(root, full)
		f, _, err := Open(Source{Root: root, Rel: filepath.ToSlash(rel), Path: full, Hardlinks: hardlinks})
		var oe *OpenError
		switch {
		case errors.As(err, &oe):
			errs = append(errs, &FieldError{ObjectID: itemName(m, i), Field: "path", Rule: "file", Value: it.Path, Message: oe.Reason})
		case err != nil:
			errs = append(errs, &FieldError{ObjectID: itemName(m, i), Field: "path", Rule: "exists", Value: it.Path, Message: err.Error()})
		default:
			f.Close()
		}
	}
	return errors.Join(errs...)
}

// ResolvePath joins a manifest-relative path to dir and refuses one that
// escapes it (absolute, "..", or through a symbolic link).
func ResolvePath(dir, rel string) (string, error) {
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") {
		return "", fmt.Errorf("path %q is absolute; paths are relative to the manifest", rel)
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q leaves the manifest's folder", rel)
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	full := filepath.Join(absDir, clean)
	if real, err := filepath.EvalSymlinks(full); err == nil {
		realDir, err := filepath.EvalSymlinks(absDir)
		if err == nil && real != realDir && !strings.HasPrefix(real, realDir+string(filepath.Separator)) {
			return "", fmt.Errorf("path %q leaves the manifest's folder through a link", rel)
		}
	}
	return full, nil
}

// MasterRules are the per-item content rules for a TIFF master.
type MasterRules struct {
	MinDPI       float64 // resolution_dpi must be at least this
	DPITolerance float64 // relative difference allowed against the file's XResolution
	RequireICC   bool    // color_profile must match an embedded ICC profile
}

type masterFields struct {
	ColorProfile  string `json:"color_profile" validate:"required"`
	ResolutionDPI string `json:"resolution_dpi" validate:"required,numeric"`
}

// CheckItemRules applies the manifest rules for a TIFF master against what the
// file holds (info may be nil when the file was not read). All problems are
// returned together as *FieldError values joined with errors.Join.
func CheckItemRules(it Item, info *tiff.TIFFInfo, icc *tiff.ICCProfile, rules MasterRules) error {
	var errs []error
	mf := masterFields{ColorProfile: strings.TrimSpace(it.ColorProfile), ResolutionDPI: strings.TrimSpace(string(it.ResolutionDPI))}
	if err := validate.Struct(mf); err != nil {
		for _, fe := range fieldErrors(&mf, err) {
			fe.(*FieldError).ObjectID = it.ObjectID
			errs = append(errs, fe)
		}
	}
	dpiOK := false
	var dpi float64
	if mf.ResolutionDPI != "" {
		if v, err := strconv.ParseFloat(mf.ResolutionDPI, 64); err == nil {
			dpi, dpiOK = v, true
			if v < rules.MinDPI {
				errs = append(errs, &FieldError{ObjectID: it.ObjectID, Field: "resolution_dpi", Rule: "min", Param: fmtNum(rules.MinDPI),
					Value: mf.ResolutionDPI, Message: fmt.Sprintf("%s dpi is below the policy minimum of %s", mf.ResolutionDPI, fmtNum(rules.MinDPI))})
				dpiOK = false
			}
		}
	}
	if info != nil && len(info.Pages) > 0 {
		p := info.Pages[0]
		if dpiOK {
			fileDPI := p.XResolution
			if p.ResolutionUnit == 3 {
				fileDPI *= 2.54
			}
			switch {
			case p.XResolution == 0 || p.ResolutionUnit == 1:
				errs = append(errs, &FieldError{ObjectID: it.ObjectID, Field: "resolution_dpi", Rule: "matches_file", Value: mf.ResolutionDPI,
					Message: "the file records no absolute XResolution to confirm it"})
			case abs(fileDPI-dpi) > dpi*rules.DPITolerance:
				errs = append(errs, &FieldError{ObjectID: it.ObjectID, Field: "resolution_dpi", Rule: "matches_file", Param: fmtNum(fileDPI),
					Value: mf.ResolutionDPI, Message: fmt.Sprintf("manifest says %s dpi, the file says %s dpi", mf.ResolutionDPI, fmtNum(fileDPI))})
			}
		}
		if rules.RequireICC && mf.ColorProfile != "" {
			switch {
			case icc == nil:
				errs = append(errs, &FieldError{ObjectID: it.ObjectID, Field: "color_profile", Rule: "embedded", Value: mf.ColorProfile,
					Message: "policy requires an embedded ICC profile (tag 34675) and the file has none"})
			case !icc.Matches(mf.ColorProfile):
				errs = append(errs, &FieldError{ObjectID: it.ObjectID, Field: "color_profile", Rule: "matches_file", Param: icc.Description,
					Value: mf.ColorProfile, Message: fmt.Sprintf("manifest says %q, the embedded ICC profile is %q", mf.ColorProfile, icc.Description)})
			}
		}
	}
	return errors.Join(errs...)
}

// fieldErrors translates validator's errors into our FieldError values.
func fieldErrors(root any, err error) []error {
	var ves validator.ValidationErrors
	if !errors.As(err, &ves) {
		return []error{err}
	}
	m, _ := root.(*Manifest)
	out := make([]error, 0, len(ves))
	for _, fe := range ves {
		objectID := ""
		ns := fe.Namespace() // e.g. Manifest.items[3].sha256
		if m != nil {
			if i := strings.Index(ns, "items["); i >= 0 {
				var idx int
				if _, err := fmt.Sscanf(ns[i:], "items[%d]", &idx); err == nil && idx < len(m.Items) {
					objectID = itemName(m, idx)
				}
			}
		}
		rule, param := fe.Tag(), fe.Param()
		if rule == "kind" {
			// The registered kinds, reported as the oneof rule they were
			// written as (manifest.kind.oneof).
			rule, param = "oneof", strings.Join(KindNames(), " ")
		}
		out = append(out, &FieldError{ObjectID: objectID, Field: fe.Field(), Rule: rule, Param: param,
			Value: fmt.Sprint(fe.Value()), Message: ruleMessage(fe)})
	}
	return out
}

func ruleMessage(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "is required"
	case "numeric":
		return fmt.Sprintf("%q is not a number", fe.Value())
	case "len":
		return fmt.Sprintf("must be %s characters", fe.Param())
	case "hexadecimal":
		return "must be hexadecimal"
	case "lowercase":
		return "must be lower case"
	case "oneof":
		return fmt.Sprintf("%q is not one of: %s", fe.Value(), fe.Param())
	case "kind":
		return fmt.Sprintf("%q is not one of: %s", fe.Value(), strings.Join(KindNames(), " "))
	case "min":
		return fmt.Sprintf("needs at least %s", fe.Param())
	case "max":
		return fmt.Sprintf("allows at most %s", fe.Param())
	case "printascii":
		return "must be printable ASCII"
	case "excludesall":
		if fe.Field() == "object_id" {
			return fmt.Sprintf("%q contains '#', which separates an interchange from its message references", fe.Value())
		}
		return fmt.Sprintf("%q contains one of %q", fe.Value(), fe.Param())
	}
	return fmt.Sprintf("breaks rule %s %s", fe.Tag(), fe.Param())
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// ReadManifestFile is ReadManifest of the file at path, confined to its
// own folder (SourceOf): for a manifest an operator names where no ingest
// root is configured. The file itself may not be a link.
func ReadManifestFile(path string) (*Manifest, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrManifestUnreadable, err)
	}
	return ReadManifest(SourceOf(abs))
}
