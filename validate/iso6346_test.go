package validate

import "testing"

// TestLetterValues: the table holds what ISO 6346 counts, 10 on from A
// skipping the multiples of 11.
func TestLetterValues(t *testing.T) {
	t.Parallel()
	v := 10
	for c := byte('A'); c <= 'Z'; c++ {
		if got := letterValue(c); got != v {
			t.Errorf("letterValue(%q) = %d, want %d", c, got, v)
		}
		if v++; v%11 == 0 {
			v++
		}
	}
}
