package validate

import (
	"fmt"
	"strconv"
)

// ContainerCheckDigit computes the ISO 6346 check digit of the first ten
// characters of a container number (owner code, category U/J/Z, serial):
// letters map to 10..38 skipping multiples of 11, each value is weighted by
// 2^position, and the sum is taken mod 11, then mod 10.
func ContainerCheckDigit(s string) (int, error) {
	if len(s) < 10 {
		return 0, fmt.Errorf("container number %q is shorter than 10 characters", s)
	}
	sum := 0
	for i := 0; i < 10; i++ {
		c := s[i]
		var v int
		switch {
		case i < 4 && c >= 'A' && c <= 'Z':
			v = letterValue(c)
		case i >= 4 && c >= '0' && c <= '9':
			v = int(c - '0')
		default:
			return 0, fmt.Errorf("container number %q: character %d (%q) is not allowed there", s, i+1, c)
		}
		sum += v << i
	}
	return sum % 11 % 10, nil
}

// letterValue is the ISO 6346 value of capital letter c.
func letterValue(c byte) int { return int(letterValues[c-'A']) }

// letterValues are the values of A..Z: 10 on, skipping 11, 22 and 33.
var letterValues = [26]uint8{
	10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 23, 24, // A..M
	25, 26, 27, 28, 29, 30, 31, 32, 34, 35, 36, 37, 38, // N..Z
}

// ContainerError says why a container number is not valid ISO 6346.
type ContainerError struct {
	Number string
	Reason string
}

func (e *ContainerError) Error() string {
	return fmt.Sprintf("container %s: %s", printableNumber(e.Number), e.Reason)
}

// printableNumber is a container number as an error may echo it: as it
// is when it is no more than 11 capital letters and digits, otherwise
// quoted (control characters, NUL and non-ASCII bytes escaped) and cut at
// 20 bytes, so that a value read from a sender's file reaches a reply, a
// ledger note or a terminal as plain text of bounded length.
func printableNumber(s string) string {
	plain := len(s) > 0 && len(s) <= 11
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	if plain {
		return s
	}
	if len(s) > 20 {
		return strconv.QuoteToASCII(s[:20]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

// CheckContainer validates an ISO 6346 container number in full: 11
// characters, a 3-letter owner code, the category identifier U, J or Z,
// a 6-digit serial number and the check digit over the ten before it.
func CheckContainer(s string) error {
	if len(s) != 11 {
		return &ContainerError{s, fmt.Sprintf("%d characters, want 11 (owner code, category, serial, check digit)", len(s))}
	}
	for i := 0; i < 3; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return &ContainerError{s, fmt.Sprintf("owner code %s, want 3 capital letters", strconv.QuoteToASCII(s[:3]))}
		}
	}
	switch s[3] {
	case 'U', 'J', 'Z':
	default:
		return &ContainerError{s, fmt.Sprintf("category %q, want U, J or Z", s[3])}
	}
	for i := 4; i < 10; i++ {
		if s[i] < '0' || s[i] > '9' {
			return &ContainerError{s, fmt.Sprintf("serial number %s, want 6 digits", strconv.QuoteToASCII(s[4:10]))}
		}
	}
	d, err := ContainerCheckDigit(s)
	if err != nil {
		return &ContainerError{s, err.Error()}
	}
	if c := s[10]; c < '0' || c > '9' || int(c-'0') != d {
		return &ContainerError{s, fmt.Sprintf("check digit %q, want %d", c, d)}
	}
	return nil
}
