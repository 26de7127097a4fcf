package directory

import "testing"

func TestCodeList(t *testing.T) {
	t.Parallel()
	codes := []string{"1", "10", "105", "ZZZ", "A", "AB", "LONGER"}
	c := newCodeList(codes)
	for _, v := range codes {
		if !c.Has([]byte(v)) {
			t.Errorf("%q not found", v)
		}
	}
	for _, v := range []string{"", "2", "100", "ZZ", "ZZZZ", "B", "ab", "LONGE", "LONGERS", "\x00", "\x00\x00\x01"} {
		if c.Has([]byte(v)) {
			t.Errorf("%q found", v)
		}
	}
	if err := loadError(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range Messages() {
		n++
		if len(m.Table) < 2 || m.Table[0].trigger != "UNH" || m.Table[len(m.Table)-1].trigger != "UNT" {
			t.Errorf("%s: table does not run from UNH to UNT", m.Name())
		}
	}
	if n != 118 {
		t.Errorf("%d message tables, want 117 schemas + CONTRL", n)
	}
}
