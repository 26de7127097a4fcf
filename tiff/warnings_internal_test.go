package tiff

import "testing"

// TestWarnCap: past max warnings of a code, the rest are one warning
// counting them and naming the pages they are on; other codes are listed
// as they came.
func TestWarnCap(t *testing.T) {
	info := &TIFFInfo{decodeCap: &WarnCap{Max: 3}}
	for i := 1; i <= 7; i++ {
		pg := i
		info.warn(Warning{Code: "tiff.lzw-no-eoi", Page: &pg, Message: "m"})
		if i == 4 {
			info.warn(Warning{Code: "tiff.block-overrun", Page: &pg, Message: "o"})
		}
	}
	got := info.decodeCap.Summarise(info.Warnings)
	var codes []string
	for _, w := range got {
		codes = append(codes, w.Code)
	}
	want := []string{"tiff.lzw-no-eoi", "tiff.lzw-no-eoi", "tiff.lzw-no-eoi", "tiff.block-overrun", "tiff.lzw-no-eoi"}
	if len(codes) != len(want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("codes %v, want %v", codes, want)
		}
	}
	last := got[len(got)-1]
	if *last.Page != 4 || last.Message != "4 more tiff.lzw-no-eoi warnings not listed (the first 3 are), on pages 4 to 7" {
		t.Errorf("summary %q on page %d", last.Message, *last.Page)
	}
	uncapped := &TIFFInfo{}
	for range 500 {
		uncapped.warn(Warning{Code: "tiff.lzw-no-eoi"})
	}
	if len(uncapped.Warnings) != 500 {
		t.Errorf("without a cap %d of 500 warnings kept", len(uncapped.Warnings))
	}
}
