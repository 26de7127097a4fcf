package validate

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/internal/testenv"
)

// dateLayouts are the time.Parse layouts validDate stands in for, by
// format (code list 2379).
var dateLayouts = map[string]string{
	"102": "20060102",
	"203": "200601021504",
	"201": "0601021504",
	"101": "060102",
	"204": "20060102150405",
}

// parsedDate is what validDate replaced: time.Parse with the format's
// layout, on a value of the layout's length.
func parsedDate(v, format string) bool {
	l, ok := dateLayouts[format]
	if !ok {
		return true
	}
	if len(v) != len(l) {
		return false
	}
	_, err := time.Parse(l, v)
	return err == nil
}

// TestValidDateIsTimeParse holds validDate to time.Parse: every byte in
// every position of a few good dates of each format, every month and day
// number with the years around the leap rules, and every two bytes in the
// place of a two-digit year.
func TestValidDateIsTimeParse(t *testing.T) {
	t.Parallel()
	check := func(v, format string) {
		t.Helper()
		if got, want := validDate(v, format), parsedDate(v, format); got != want {
			t.Fatalf("validDate(%q, %s) = %v, time.Parse says %v", v, format, got, want)
		}
	}
	bases := map[string][]string{
		"102": {"20240229", "19000228", "00000229", "99991231"},
		"203": {"202402292359", "190002280000", "000002291200"},
		"201": {"2402292359", "6902281200", "6812312359", "0002290000"},
		"101": {"240229", "690228", "681231", "000229"},
		"204": {"20240229235959", "19000228000000", "00000229123059"},
	}
	for format, vs := range bases {
		for _, base := range vs {
			check(base, format)
			b := []byte(base)
			for i := range b {
				orig := b[i]
				for c := 0; c < 256; c++ {
					b[i] = byte(c)
					check(string(b), format)
				}
				b[i] = orig
			}
		}
	}
	for _, year := range []string{"0000", "0004", "0100", "0400", "1900", "1969", "2000", "2023", "2024", "2100", "9996", "9999"} {
		for md := 0; md < 10000; md++ {
			mmdd := string([]byte{byte('0' + md/1000), byte('0' + md/100%10), byte('0' + md/10%10), byte('0' + md%10)})
			check(year+mmdd, "102")
			check(year+mmdd+"1200", "203")
			check(year[2:]+mmdd, "101")
		}
	}
	for a := 0; a < 256; a++ {
		for b := 0; b < 256; b++ {
			yy := string([]byte{byte(a), byte(b)})
			check(yy+"0229", "101")
			check(yy+"02282359", "201")
		}
	}
	for _, v := range []string{"", "2024", "202402290", "2024-02-29", "+0240229", "-1010229", "+40229"} {
		for format := range dateLayouts {
			check(v, format)
		}
		check(v, "718") // not checked
	}
}

// FuzzValidDate: validDate says what time.Parse says, for every format.
func FuzzValidDate(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	for _, seed := range []string{"20240229", "202402292359", "2402292359", "240229", "20240229235959", "+40229", "-0022912"} {
		seeds.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, format := range []string{"102", "203", "201", "101", "204", "718"} {
			if got, want := validDate(v, format), parsedDate(v, format); got != want {
				t.Fatalf("validDate(%q, %s) = %v, time.Parse says %v", v, format, got, want)
			}
		}
	})
}

// TestWholeNumberIsParseFloat: wholeNumber reads what it takes as
// strconv.ParseFloat does, and takes nothing it would read otherwise.
func TestWholeNumberIsParseFloat(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0", "7", "24000", "0012", "999999999999999", "1000000000000000", "9999999999999999",
		"", "-1", "+1", "1.5", "1,5", "1e3", " 1", "1 ", "0x10", "١", "12a", "Inf", "NaN"} {
		v, ok := wholeNumber(s)
		want, err := strconv.ParseFloat(s, 64)
		if ok && (err != nil || v != want) {
			t.Errorf("wholeNumber(%q) = %v, ParseFloat %v %v", s, v, want, err)
		}
		if digits := strings.Trim(s, "0123456789") == "" && s != ""; ok != (digits && len(s) <= 15) {
			t.Errorf("wholeNumber(%q) ok = %v", s, ok)
		}
	}
	for n := int64(1); n > 0 && n < 1e15; n = n*7 + 3 {
		s := strconv.FormatInt(n, 10)
		if v, ok := wholeNumber(s); !ok || v != float64(n) {
			t.Errorf("wholeNumber(%q) = %v, %v", s, v, ok)
		}
	}
}
