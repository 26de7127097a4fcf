package edifact

import "testing"

// The set finds every repeated reference, whether the references run 1,
// 2, 3 (held as an interval) or not, and tells "01" from "1".
func TestRefSet(t *testing.T) {
	t.Parallel()
	cases := []struct {
		refs []string
		dup  int // index of the first duplicate, -1 for none
	}{
		{[]string{"1", "2", "3", "4"}, -1},
		{[]string{"1", "2", "3", "2"}, 3},
		{[]string{"1", "1"}, 1},
		{[]string{"1", "01", "001", "A1", "a1"}, -1},
		{[]string{"5", "3", "4", "5"}, 3},
		{[]string{"3", "5", "4", "5"}, 3},
		{[]string{"1", "2", "7", "3", "4", "5", "6", "7"}, 7},
		{[]string{"ABC", "1", "2", "ABC"}, 3},
		{[]string{"0", "1", "0"}, 2},
		{[]string{"999999999999999999", "1000000000000000000", "999999999999999999"}, 2},
	}
	for _, tc := range cases {
		var s refSet
		for _, r := range tc.refs {
			if s.has([]byte(r)) != s.add([]byte(r)) {
				t.Errorf("%v: has and add disagree on %q", tc.refs, r)
			}
			if !s.has([]byte(r)) {
				t.Errorf("%v: %q not kept", tc.refs, r)
			}
		}
		got := -1
		var f refSet
		for i, r := range tc.refs {
			if f.add([]byte(r)) {
				got = i
				break
			}
		}
		if got != tc.dup {
			t.Errorf("%v: first duplicate at %d, want %d", tc.refs, got, tc.dup)
		}
	}
}
