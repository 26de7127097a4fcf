package edifact

import (
	"strconv"
	"testing"
)

// The set finds every repeated reference, whether the references run 1,
// 2, 3 or 0001, 0002 or MSG1, MSG2 (held as an interval) or not, tells
// "01" from "1", and holds no reference of a run one by one.
func TestRefSet(t *testing.T) {
	t.Parallel()
	cases := []struct {
		refs  []string
		dup   int // index of the first duplicate, -1 for none
		other int // references held one by one at the end (none duplicate)
	}{
		{[]string{"1", "2", "3", "4"}, -1, 0},
		{[]string{"1", "2", "3", "2"}, 3, 0},
		{[]string{"1", "1"}, 1, 0},
		{[]string{"1", "01", "001", "A1", "a1"}, -1, 4},
		{[]string{"5", "3", "4", "5"}, 3, 0},
		{[]string{"3", "5", "4", "5"}, 3, 0},
		{[]string{"1", "2", "7", "3", "4", "5", "6", "7"}, 7, 0},
		{[]string{"ABC", "1", "2", "ABC"}, 3, 0},
		{[]string{"0", "1", "0"}, 2, 0},
		{[]string{"999999999999999999", "1000000000000000000", "999999999999999999"}, 2, 0},
		{[]string{"0001", "0002", "0003", "0004"}, -1, 0},
		{[]string{"0001", "0002", "2", "0003", "0002"}, 4, 0},
		{[]string{"0998", "0999", "1000", "1001", "0999"}, 4, 0},
		{[]string{"0998", "0999", "1000", "01001", "1001"}, -1, 1},
		{[]string{"MSG1", "MSG2", "MSG02", "MSG3", "MSG2"}, 4, 0},
		{[]string{"M0001", "M0002", "N0003", "M0003", "N0003"}, 4, 0},
		{[]string{"M9", "M10", "M11", "M010"}, -1, 1},
		{[]string{"IC42-1", "IC42-2", "IC42-3"}, -1, 0},
	}
	for _, tc := range cases {
		var s refSet
		for _, r := range tc.refs {
			had := s.has([]byte(r))
			dup, full := s.add([]byte(r))
			if had != dup || full {
				t.Errorf("%v: %q: has %v, add %v %v", tc.refs, r, had, dup, full)
			}
			if !s.has([]byte(r)) {
				t.Errorf("%v: %q not kept", tc.refs, r)
			}
		}
		got := -1
		var f refSet
		for i, r := range tc.refs {
			if dup, _ := f.add([]byte(r)); dup {
				got = i
				break
			}
		}
		if got != tc.dup {
			t.Errorf("%v: first duplicate at %d, want %d", tc.refs, got, tc.dup)
		}
		if tc.dup < 0 && f.other.n != tc.other {
			t.Errorf("%v: %d references held one by one, want %d", tc.refs, f.other.n, tc.other)
		}
	}
}

// Past max references out of sequence the set says it is full and holds
// no more; a run costs nothing however long.
func TestRefSetBound(t *testing.T) {
	t.Parallel()
	s := refSet{max: 3}
	for _, r := range []string{"9", "7", "5", "3"} {
		if dup, full := s.add([]byte(r)); dup || full {
			t.Fatalf("%s: dup %v full %v", r, dup, full)
		}
	}
	if dup, full := s.add([]byte("1")); dup || !full || s.other.n != 3 {
		t.Errorf("the fourth out of sequence: dup %v full %v, %d held", dup, full, s.other.n)
	}
	if dup, _ := s.add([]byte("7")); !dup {
		t.Error("a duplicate of a held reference is still found when full")
	}
	var run refSet
	for i := 1; i <= 100000; i++ {
		if dup, full := run.add([]byte("0" + strconv.Itoa(100000+i))); dup || full {
			t.Fatalf("run at %d: dup %v full %v", i, dup, full)
		}
	}
	if run.other.n != 0 {
		t.Errorf("a run of 100000 held %d references one by one", run.other.n)
	}
}

// hashSet finds what it holds and nothing else, through growth and long
// probe chains (values that share their low bits).
func TestHashSet(t *testing.T) {
	t.Parallel()
	var h hashSet
	for i := uint64(1); i <= 5000; i++ {
		v := i << 32 // the same low bits: every value probes from slot 0
		if i%2 == 0 {
			v = i*0x9e3779b97f4a7c15 | 1
		}
		if h.has(v) {
			t.Fatalf("%#x found before it was added", v)
		}
		h.add(v)
		if !h.has(v) {
			t.Fatalf("%#x not found after it was added", v)
		}
	}
	if h.n != 5000 || len(h.slots)*3 < h.n*4 {
		t.Errorf("%d held in %d slots", h.n, len(h.slots))
	}
	for i := uint64(1); i <= 5000; i++ {
		if !h.has(i<<32) && i%2 == 1 {
			t.Fatalf("%#x lost", i<<32)
		}
	}
	if h.has(7) {
		t.Error("7 found")
	}
}
