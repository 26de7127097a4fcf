package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-playground/validator/v10"
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
	Kind          string  `json:"kind" validate:"required,oneof=tiff edifact"`
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
	return v
}

// ReadManifest reads and checks a manifest file: JSON shape, required
// fields, digests, kinds, unique object ids, and every path inside the
// manifest's folder. All problems come back together (errors.Join of
// *FieldError). Per-item content rules (colour profile, resolution) are not
// checked here: they belong to the item's validation and route it to
// quarantine without refusing the batch.
func ReadManifest(path string) (*Manifest, string, error) {
	f, _, err := Open(Source{Path: path})
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, "", err
	}
	if len(b) > MaxManifestBytes {
		return nil, "", fmt.Errorf("manifest %s is larger than %d bytes", path, MaxManifestBytes)
	}
	m, err := ParseManifest(b)
	dir := filepath.Dir(path)
	if err != nil {
		return m, dir, err
	}
	return m, dir, m.Check(dir)
}

// ParseManifest decodes a manifest strictly (unknown fields are errors).
func ParseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if dec.More() {
		return nil, errors.New("manifest: trailing data after the JSON object")
	}
	return &m, nil
}

// Check applies the boundary rules to m. dir is the manifest's folder; item
// paths must stay inside it.
func (m *Manifest) Check(dir string) error {
	var errs []error
	if err := validate.Struct(m); err != nil {
		errs = append(errs, fieldErrors(m, err)...)
	}
	seen := map[string]int{}
	for i, it := range m.Items {
		if j, dup := seen[it.ObjectID]; dup && it.ObjectID != "" {
			errs = append(errs, &FieldError{ObjectID: it.ObjectID, Field: "object_id", Rule: "unique", Value: it.ObjectID,
				Message: fmt.Sprintf("object id repeats item %d", j)})
		}
		seen[it.ObjectID] = i
		if it.Path != "" {
			if _, err := ResolvePath(dir, it.Path); err != nil {
				errs = append(errs, &FieldError{ObjectID: it.ObjectID, Field: "path", Rule: "inside", Value: it.Path, Message: err.Error()})
			}
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
func CheckItemRules(it Item, info *TIFFInfo, icc *ICCProfile, rules MasterRules) error {
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
					objectID = m.Items[idx].ObjectID
					if objectID == "" {
						objectID = fmt.Sprintf("items[%d]", idx)
					}
				}
			}
		}
		out = append(out, &FieldError{ObjectID: objectID, Field: fe.Field(), Rule: fe.Tag(), Param: fe.Param(),
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
