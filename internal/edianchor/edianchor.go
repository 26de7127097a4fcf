// Package edianchor is what the UN/EDIFACT benchmarks measure against:
// Tokenize, a streaming tokenizer that does the least any EDIFACT parser
// must, and LargeInterchange, the ~50 MB interchange they all read. The
// parser's benchmarks (package edifact), the directory's and inspect's
// (cmd/lazaret) share one copy of each, so that their ratios are to the
// same anchor on the same bytes.
package edianchor

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
)

// LargeSize is about how many bytes LargeInterchange holds.
const LargeSize = 50 << 20

var (
	largeOnce sync.Once
	largePath string
	largeErr  error
)

// LargeInterchange is the path of fixtures.LargeInterchange (about 50 MB
// of good IFTMIN and VERMAS messages, about 217,000 of them) in the temp
// folder, written once per machine and reused by every benchmark that
// reads it.
func LargeInterchange(tb testing.TB) string {
	tb.Helper()
	largeOnce.Do(func() { largePath, largeErr = writeLarge() })
	if largeErr != nil {
		tb.Fatal(largeErr)
	}
	return largePath
}

func writeLarge() (string, error) {
	path := filepath.Join(os.TempDir(), "lazaret-bench-50mb.edi")
	if st, err := os.Stat(path); err == nil && st.Size() > LargeSize {
		return path, nil
	}
	// Another test binary may be writing it too: each writes its own
	// partial file and the rename is atomic.
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".partial-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name()) // after the rename, nothing
	w := bufio.NewWriterSize(f, 1<<20)
	err = fixtures.LargeInterchange(w, LargeSize)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return path, os.Rename(f.Name(), path)
}

// Stats is what Tokenize finds: counts of every token and a sum of their
// byte offsets (so that no offset is optimised away).
type Stats struct {
	Segments, Elements, Components int
	Offsets                        int64
}

const (
	tkData = iota
	tkComp
	tkElem
	tkRep
	tkRel
	tkTerm
	tkCRLF
)

// Tokenize is the anchor for the parser's speed: a streaming tokenizer
// that allocates nothing and builds nothing, reading r through buf. It
// reads the UNA service characters (after a BOM), honours the release
// character (across reads too), finds every segment, data element,
// repetition and component boundary and the byte offset where each token
// starts, drops CR/LF between and inside segments, and counts. It does not
// check tags, envelopes, limits or repertoires and keeps no values: it is
// the work any EDIFACT parser must do at least, written as tight as a byte
// loop gets.
func Tokenize(r io.Reader, buf []byte) (Stats, error) {
	var st Stats
	n, err := io.ReadAtLeast(r, buf, 9)
	if err != nil && err != io.ErrUnexpectedEOF {
		return st, err
	}
	b := buf[:n]
	var base int64 // input offset of b[0]
	i := uint(0)   // unsigned: the bounds checks are proved away
	if len(b) >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf {
		i = 3
	}
	comp, elem, rel, rep, term := byte(':'), byte('+'), byte('?'), byte(0), byte('\'')
	if uint(len(b))-i >= 9 && string(b[i:i+3]) == "UNA" {
		comp, elem, rel, rep, term = b[i+3], b[i+4], b[i+6], b[i+7], b[i+8]
		if rel == ' ' {
			rel = 0
		}
		if rep == ' ' {
			rep = 0
		}
		i += 9
	}
	var class [256]byte
	class['\r'], class['\n'] = tkCRLF, tkCRLF
	class[comp], class[elem], class[term] = tkComp, tkElem, tkTerm
	if rep != 0 {
		class[rep] = tkRep
	}
	if rel != 0 {
		class[rel] = tkRel
	}
	between := true // before a segment's first byte: skip whitespace
	for {
		for {
			if between {
				for i < uint(len(b)) && (b[i] == ' ' || class[b[i]] == tkCRLF || b[i] == '\t') {
					i++
				}
				if i >= uint(len(b)) {
					break
				}
				between = false
				st.Segments++
				st.Offsets += base + int64(i)
			}
			for i < uint(len(b)) && class[b[i]] == tkData {
				i++
			}
			if i >= uint(len(b)) {
				break
			}
			switch class[b[i]] {
			case tkRel:
				i++ // the next byte is data, even when it is in the next read
			case tkComp:
				st.Components++
				st.Offsets += base + int64(i) + 1
			case tkElem, tkRep:
				st.Elements++
				st.Offsets += base + int64(i) + 1
			case tkTerm:
				between = true
			}
			i++
		}
		i -= uint(len(b)) // 1 when a release character ended the read
		base += int64(len(b))
		n, err := r.Read(buf)
		if n == 0 && err == io.EOF {
			return st, nil
		}
		if err != nil && err != io.EOF {
			return st, err
		}
		b = buf[:n]
	}
}
