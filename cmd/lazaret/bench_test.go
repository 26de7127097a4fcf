package main

import "testing"

// TestMedianOfRounds: the ÷ River column is the middle round, so one round
// the machine slowed (here the 0.2) does not move it, as it moves a mean.
func TestMedianOfRounds(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{0.7}, 0.7},
		{[]float64{0.7, 0.2, 0.66}, 0.66},
		{[]float64{0.4, 0.8, 0.2, 0.6}, 0.5},
	} {
		in := append([]float64(nil), c.in...)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("median reordered its input: %v, was %v", c.in, in)
			}
		}
	}
	if got, want := roundRatios([]float64{0.66, 1.2, 0.404}), "0.66 1.20 0.40"; got != want {
		t.Errorf("roundRatios = %q, want %q (in the order run)", got, want)
	}
}
