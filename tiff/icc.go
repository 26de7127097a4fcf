package tiff

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
)

// ICCProfile is what Lazaret reads of an embedded ICC profile.
type ICCProfile struct {
	ColorSpace  string // data colour space from the header, e.g. "RGB", "GRAY"
	Description string // the 'desc' tag
}

// maxICC caps the profile bytes read; real profiles are a few KB to a few MB.
const maxICC = 16 << 20

// ReadICC reads the profile at off (length n) in r: the header's colour
// space and the 'desc' tag (ICC v2 textDescriptionType or v4
// multiLocalizedUnicodeType).
func ReadICC(r io.ReaderAt, off, n int64) (*ICCProfile, error) {
	if n < 132 || n > maxICC {
		return nil, fmt.Errorf("icc: profile of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("icc: %w", err)
	}
	be := binary.BigEndian
	p := &ICCProfile{ColorSpace: strings.TrimSpace(string(b[16:20]))}
	count := be.Uint32(b[128:132])
	if uint64(count)*12+132 > uint64(n) {
		return nil, fmt.Errorf("icc: tag table of %d entries runs past the profile", count)
	}
	// The last 'desc' entry is the one read, and only once: a table may
	// list one large text a million times.
	var desc []byte
	for i := uint32(0); i < count; i++ {
		t := b[132+12*i:]
		if string(t[:4]) != "desc" {
			continue
		}
		to, ts := uint64(be.Uint32(t[4:8])), uint64(be.Uint32(t[8:12]))
		if to+ts > uint64(n) || ts < 12 {
			return nil, fmt.Errorf("icc: desc tag outside the profile")
		}
		desc = b[to : to+ts]
	}
	if desc != nil {
		p.Description = iccText(desc)
	}
	return p, nil
}

func iccText(d []byte) string {
	be := binary.BigEndian
	switch string(d[:4]) {
	case "desc":
		l := uint64(be.Uint32(d[8:12]))
		if 12+l > uint64(len(d)) {
			l = uint64(len(d)) - 12
		}
		return strings.TrimRight(string(d[12:12+l]), "\x00")
	case "mluc":
		if len(d) < 28 || be.Uint32(d[8:12]) == 0 {
			return ""
		}
		l, o := uint64(be.Uint32(d[20:24])), uint64(be.Uint32(d[24:28]))
		if o+l > uint64(len(d)) {
			return ""
		}
		u := make([]uint16, l/2)
		for i := range u {
			u[i] = be.Uint16(d[o+2*uint64(i):])
		}
		return strings.TrimRight(string(utf16.Decode(u)), "\x00")
	}
	return ""
}

// Matches reports whether a manifest's colour profile name names this
// profile: equal or contained after folding case and dropping everything but
// letters and digits ("Adobe RGB (1998)" matches "AdobeRGB1998").
func (p *ICCProfile) Matches(name string) bool {
	a, b := fold(name), fold(p.Description)
	if a == "" || b == "" {
		return false
	}
	return strings.Contains(b, a) || strings.Contains(a, b)
}

func fold(s string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}
