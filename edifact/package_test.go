package edifact_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/lazaret/lazaret/edifact"
)

// object is a binary object that holds every service character, a
// segment that looks like an envelope's, line ends and NUL bytes: read
// as segments, it breaks the interchange.
const object = "\x00\x01'UNZ+1+X'\nUNH+9+X:D:96A:UN'?'+:*\r\n\xff\xfe PNG\x1a\x00"

// withPackage is an interchange of a message, a package (ISO 9735-8)
// holding object, and a second message; length and unpLength are the
// octet counts UNO and UNP declare, count UNZ's. § marks the first UNH,
// the first octet of the object and the second UNH.
func withPackage(length, unpLength, count int, unpRef string) string {
	return "UNB+UNOC:4+S+R+20261130:1200+IC1'\n§UNH+1+IFTMIN:D:99B:UN'\nBGM+610+A+9'\nUNT+3+1'\n" +
		fmt.Sprintf("UNO+P1+1:IC1+PDF+%d'§", length) + object + fmt.Sprintf("UNP+%d+%s'\n", unpLength, unpRef) +
		fmt.Sprintf("§UNH+2+IFTMIN:D:99B:UN'\nBGM+610+B+9'\nUNT+3+2'\nUNZ+%d+IC1'\n", count)
}

// TestPackagesAreSkippedByTheirLength: a package's octets are skipped by
// their declared length, never read as segments, whatever they hold; the
// messages around it are read, the one after it at its exact offset; UNZ
// counts the package with the messages.
func TestPackagesAreSkippedByTheirLength(t *testing.T) {
	t.Parallel()
	text, offs := marked(withPackage(len(object), len(object), 3, "P1"))
	if got := text[offs[1] : offs[1]+int64(len(object))]; got != object {
		t.Fatalf("object at %d: %q", offs[1], got)
	}
	for _, how := range []string{"whole", "bytes"} {
		for _, cb := range []bool{true, false} {
			var in io.Reader = strings.NewReader(text)
			if how == "bytes" {
				in = iotest.OneByteReader(in)
			}
			var got []int64
			var fn func(*edifact.Message) error
			if cb {
				fn = func(m *edifact.Message) error { got = append(got, m.Offset); return nil }
			}
			ic, err := edifact.Parse(in, edifact.Limits{}, fn)
			if err != nil {
				t.Fatalf("%s callback %v: %v", how, cb, err)
			}
			if ic.Messages != 2 || ic.Packages != 1 || ic.Next != nil {
				t.Errorf("%s callback %v: %d messages, %d packages", how, cb, ic.Messages, ic.Packages)
			}
			if cb && (len(got) != 2 || got[0] != offs[0] || got[1] != offs[2]) {
				t.Errorf("%s: messages at %v, want %d and %d", how, got, offs[0], offs[2])
			}
		}
	}
	env := edifact.ReadEnvelope(strings.NewReader(text), edifact.Limits{})
	if env.Stopped != nil || len(env.Messages) != 2 || env.Messages[1].Offset != offs[2] || !env.HasUNZ || env.UNZCount != "3" {
		t.Errorf("envelope: %+v", env)
	}
}

// TestPackageFaults: a length past the end of the input, one that ends
// before or after UNP, a UNP that disagrees with its UNO, a package inside
// a message and a UNZ that does not count it are syntax errors at their
// offsets.
func TestPackageFaults(t *testing.T) {
	t.Parallel()
	good, offs := marked(withPackage(len(object), len(object), 3, "P1"))
	unoLen := int64(strings.Index(good, "+PDF+") + len("+PDF+"))
	unp := int64(strings.Index(good, "UNP+"))
	cases := []struct {
		name  string
		in    string
		cause error
		at    int64
	}{
		{"past the end", withPackage(5000, 5000, 3, "P1"), edifact.ErrObjectLength, unoLen},
		{"ends before UNP", withPackage(len(object)-3, len(object)-3, 3, "P1"), edifact.ErrObjectLength, offs[1] + int64(len(object)) - 3},
		{"ends inside UNP", withPackage(len(object)+2, len(object)+2, 3, "P1"), edifact.ErrObjectLength, unp + 2},
		{"UNP length", withPackage(len(object), len(object)+1, 3, "P1"), edifact.ErrCount, unp + 4},
		{"UNP reference", withPackage(len(object), len(object), 3, "P2"), edifact.ErrReference, unp + 4 + int64(len(fmt.Sprint(len(object)))) + 1},
		{"UNZ without the package", withPackage(len(object), len(object), 2, "P1"), edifact.ErrCount, int64(strings.LastIndex(good, "UNZ+") + 4)},
		{"not a length", strings.Replace(good, fmt.Sprintf("+PDF+%d'", len(object)), "+PDF+X'", 1), edifact.ErrObjectLength, unoLen},
		{"inside a message", strings.Replace(good, "UNT+3+1'\nUNO", "UNO", 1), edifact.ErrMissingUNT, int64(strings.Index(good, "UNO+")) - int64(len("UNT+3+1'\n"))},
	}
	for _, c := range cases {
		in, _ := marked(c.in)
		for _, cb := range []bool{true, false} {
			var fn func(*edifact.Message) error
			if cb {
				fn = func(*edifact.Message) error { return nil }
			}
			_, err := edifact.Parse(strings.NewReader(in), edifact.Limits{}, fn)
			var se *edifact.SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, c.cause) || se.Offset != c.at {
				t.Errorf("%s (callback %v): %v, want %v at byte %d", c.name, cb, err, c.cause, c.at)
			}
		}
	}
}

// TestPackageSegmentsBeforeObject: a UNO whose S022 0814 says one
// segment stands between it and the object: that segment is read as a
// segment, the object after it skipped by its length; a UNO that says
// more segments than follow before the end is refused.
func TestPackageSegmentsBeforeObject(t *testing.T) {
	t.Parallel()
	obj := "'+:?\x00UNZ"
	text := "UNB+UNOC:4+S+R+20261130:1200+IC1'UNO+P1+1:IC1+PDF+" + fmt.Sprint(len(obj)) + ":1'ABC+x'" + obj +
		"UNP+" + fmt.Sprint(len(obj)) + "+P1'UNH+1+IFTMIN:D:99B:UN'BGM+610+A+9'UNT+3+1'UNZ+2+IC1'"
	var at []int64
	ic, err := edifact.Parse(strings.NewReader(text), edifact.Limits{}, func(m *edifact.Message) error { at = append(at, m.Offset); return nil })
	if err != nil || ic.Packages != 1 || len(at) != 1 || at[0] != int64(strings.Index(text, "UNH+")) {
		t.Fatalf("0814 = 1: %v, %d packages, messages at %v", err, ic.Packages, at)
	}
	cut := text[:strings.Index(text, "ABC+")] + "ABC+x'"
	if _, err := edifact.Parse(strings.NewReader(strings.Replace(cut, ":1'ABC", ":3'ABC", 1)), edifact.Limits{}, nil); !errors.Is(err, edifact.ErrObjectLength) {
		t.Errorf("0814 = 3 with one segment before the end: %v", err)
	}
}
