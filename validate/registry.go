package validate

import (
	"bufio"
	"compress/bzip2"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Registry is an immutable set of codes with a version: the content hash
// of what it was loaded from, and when.
type Registry struct {
	Name     string // "UN/LOCODE", "HS"
	Source   string // files it came from, or "built-in"
	Hash     string // first 12 hex digits of the content's SHA-256
	LoadedAt time.Time
	codes    map[string]struct{}
}

// Version names this registry's content: "UN/LOCODE@3f2a1c9d0b7e".
func (r *Registry) Version() string { return r.Name + "@" + r.Hash }

// Has reports whether code is in the registry.
func (r *Registry) Has(code string) bool {
	_, ok := r.codes[code]
	return ok
}

// Len is the number of codes.
func (r *Registry) Len() int { return len(r.codes) }

func newRegistry(name, source string, codes map[string]struct{}) *Registry {
	keys := make([]string, 0, len(codes))
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{'\n'})
	}
	return &Registry{Name: name, Source: source, Hash: hex.EncodeToString(h.Sum(nil))[:12], LoadedAt: time.Now().UTC(), codes: codes}
}

// Registries are the code lists the logistics rules check against.
type Registries struct {
	LOCODE *Registry
	HS     *Registry
}

// Builtin is a small registry set for the fixtures and the demo.
func Builtin() *Registries {
	loc := map[string]struct{}{}
	for _, c := range []string{"NLRTM", "DEHAM", "BEANR", "SGSIN", "CNSHA", "USNYC", "GBFXT", "USLGB", "CNYTN", "ITGOA", "FRLEH", "GBPME"} {
		loc[c] = struct{}{}
	}
	hs := map[string]struct{}{}
	for _, c := range []string{"847130", "851712", "870323", "090111", "610910", "940360"} {
		hs[c], hs[c[:4]], hs[c[:2]] = struct{}{}, struct{}{}, struct{}{}
	}
	return &Registries{LOCODE: newRegistry("UN/LOCODE", "built-in", loc), HS: newRegistry("HS", "built-in", hs)}
}

func openMaybeBzip2(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".bz2") {
		return struct {
			io.Reader
			io.Closer
		}{bzip2.NewReader(bufio.NewReader(f)), f}, nil
	}
	return f, nil
}

// LoadLOCODE reads UN/LOCODE code lists in the UNECE CSV layout (Change,
// Country, Location, Name, ...; no header; ISO 8859-1 or UTF-8; .bz2 too).
// Entries marked "X" (to be removed) are left out.
func LoadLOCODE(paths ...string) (*Registry, error) {
	codes := map[string]struct{}{}
	for _, p := range paths {
		rc, err := openMaybeBzip2(p)
		if err != nil {
			return nil, fmt.Errorf("UN/LOCODE %s: %w", p, err)
		}
		r := csv.NewReader(bufio.NewReader(rc))
		r.FieldsPerRecord, r.LazyQuotes, r.ReuseRecord = -1, true, true
		line := 0
		for {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			line++
			if err != nil {
				rc.Close()
				return nil, fmt.Errorf("UN/LOCODE %s line %d: %w", p, line, err)
			}
			if len(rec) < 3 || rec[2] == "" || strings.TrimSpace(rec[0]) == "X" {
				continue
			}
			code := strings.ToUpper(strings.TrimSpace(rec[1]) + strings.TrimSpace(rec[2]))
			if IsLOCODE(code) {
				codes[code] = struct{}{}
			}
		}
		rc.Close()
	}
	if len(codes) == 0 {
		return nil, fmt.Errorf("UN/LOCODE %v: no codes found", paths)
	}
	return newRegistry("UN/LOCODE", strings.Join(paths, ","), codes), nil
}

// LoadHS reads Harmonized System codes from CSV files with a header that
// names an "hscode" column (the UN Comtrade layout).
func LoadHS(paths ...string) (*Registry, error) {
	codes := map[string]struct{}{}
	for _, p := range paths {
		rc, err := openMaybeBzip2(p)
		if err != nil {
			return nil, fmt.Errorf("HS %s: %w", p, err)
		}
		r := csv.NewReader(bufio.NewReader(rc))
		r.FieldsPerRecord, r.LazyQuotes = -1, true
		head, err := r.Read()
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("HS %s: header: %w", p, err)
		}
		col, section := -1, -1
		for i, h := range head {
			switch strings.ToLower(strings.TrimSpace(h)) {
			case "hscode":
				col = i
			case "section":
				section = i
			}
		}
		if col < 0 {
			rc.Close()
			return nil, fmt.Errorf("HS %s: no hscode column in %v", p, head)
		}
		for {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return nil, fmt.Errorf("HS %s: %w", p, err)
			}
			if section >= 0 && section < len(rec) && rec[section] == "TOTAL" {
				continue // the statistical "commodities not specified" line, not a tariff heading
			}
			if col < len(rec) && isDigits(rec[col]) {
				codes[rec[col]] = struct{}{}
			}
		}
		rc.Close()
	}
	if len(codes) == 0 {
		return nil, fmt.Errorf("HS %v: no codes found", paths)
	}
	return newRegistry("HS", strings.Join(paths, ","), codes), nil
}

// IsLOCODE reports whether s has the UN/LOCODE shape: two letters (ISO
// 3166-1 country) and three of A-Z and 2-9.
func IsLOCODE(s string) bool {
	if len(s) != 5 {
		return false
	}
	for i := 0; i < 5; i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
		case i >= 2 && c >= '2' && c <= '9':
		default:
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// RegistryStore holds the registries in force and reloads them when their
// files change, so workers pick up a new version without a restart.
type RegistryStore struct {
	LOCODEFiles []string
	HSFiles     []string

	mu    sync.Mutex
	cur   atomic.Pointer[Registries]
	stamp string
}

// Current returns the registries in force (built-in until loaded).
func (s *RegistryStore) Current() *Registries {
	if r := s.cur.Load(); r != nil {
		return r
	}
	s.Refresh()
	if r := s.cur.Load(); r != nil {
		return r
	}
	return Builtin()
}

// Refresh reloads the registries when any file's size or modification time
// changed since the last load. It reports whether a new version is in force.
func (s *RegistryStore) Refresh() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var stamp strings.Builder
	for _, p := range append(append([]string(nil), s.LOCODEFiles...), s.HSFiles...) {
		st, err := os.Stat(p)
		if err != nil {
			return false, fmt.Errorf("registry %s: %w", p, err)
		}
		fmt.Fprintf(&stamp, "%s:%d:%d;", p, st.Size(), st.ModTime().UnixNano())
	}
	if s.cur.Load() != nil && stamp.String() == s.stamp {
		return false, nil
	}
	regs := Builtin()
	var err error
	if len(s.LOCODEFiles) > 0 {
		if regs.LOCODE, err = LoadLOCODE(s.LOCODEFiles...); err != nil {
			return false, err
		}
	}
	if len(s.HSFiles) > 0 {
		if regs.HS, err = LoadHS(s.HSFiles...); err != nil {
			return false, err
		}
	}
	old := s.cur.Load()
	s.cur.Store(regs)
	s.stamp = stamp.String()
	changed := old == nil || old.LOCODE.Hash != regs.LOCODE.Hash || old.HS.Hash != regs.HS.Hash
	return changed, nil
}
