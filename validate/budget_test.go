package validate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// TestInflateBoundNamesStrip: a strip that decompresses a little past its
// rows (an older encoder's overrun) is read to its rows with one
// tiff.block-overrun warning naming the first such strip, as libtiff reads
// it; one that decompresses past the limit no honest encoder reaches (an
// eighth more, or 4 KiB) is refused with a LimitError naming its page, tag
// and offset — whether the page is decoded (the default budget) or counted
// (a budget too small for any band). The last strip may hold a full
// RowsPerStrip rows.
func TestInflateBoundNamesStrip(t *testing.T) {
	t.Parallel()
	const w, h, rps = 64, 56, 16 // four strips: 16, 16, 16 and 8 rows
	full, last := int64(w*rps), int64(w*(h%rps))
	const slack = 4 << 10 // full/8 is less
	cases := []struct {
		name  string
		sizes []int64
		warn  int // strip named by the overrun warning, -1 for none
		bad   int // strip refused, -1 for none
		limit int64
	}{
		{"every strip holds its rows", []int64{full, full, full, last}, -1, -1, 0},
		{"last strip written full", []int64{full, full, full, full}, -1, -1, 0},
		{"third strip one byte over", []int64{full, full, full + 1, last}, 2, -1, 0},
		{"second and third strips a few bytes over", []int64{full, full + 3, full + 5, last}, 1, -1, 0},
		{"last strip one byte over a full strip", []int64{full, full, full, full + 1}, 3, -1, 0},
		{"third strip at the limit", []int64{full, full, full + slack, last}, 2, -1, 0},
		{"third strip one byte past the limit", []int64{full, full, full + slack + 1, last}, -1, 2, full + slack},
		{"first strip a hundred times over", []int64{100 * full, full, full, last}, -1, 0, full + slack},
	}
	for _, tc := range cases {
		data, at := fixtures.DeflateStrips(w, h, rps, tc.sizes)
		for _, budget := range []int64{tiff.DefaultMemoryBudget, 0} {
			info, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if budget == 0 {
				budget = info.Held + 1
			}
			_, err = tiff.DecodePages(bytes.NewReader(data), info, tiff.DecodeOptions{PixelBudget: 1 << 20, MemoryBudget: budget})
			if tc.bad < 0 {
				if err != nil {
					t.Errorf("%s, budget %d: %v", tc.name, budget, err)
				}
				var overruns []tiff.Warning
				for _, wr := range info.Warnings {
					if wr.Code == "tiff.block-overrun" {
						overruns = append(overruns, wr)
					}
				}
				switch {
				case tc.warn < 0 && len(overruns) > 0:
					t.Errorf("%s, budget %d: unexpected %+v", tc.name, budget, overruns)
				case tc.warn >= 0 && len(overruns) != 1:
					t.Errorf("%s, budget %d: want one tiff.block-overrun warning, got %+v", tc.name, budget, info.Warnings)
				case tc.warn >= 0 && (*overruns[0].Offset != at[tc.warn] || *overruns[0].Page != 1 ||
					!strings.HasPrefix(overruns[0].Message, fmt.Sprintf("strip %d decompresses to %d bytes, %d more", tc.warn, tc.sizes[tc.warn], tc.sizes[tc.warn]-full))):
					t.Errorf("%s, budget %d: warning %q at byte %d, want strip %d at byte %d", tc.name, budget, overruns[0].Message, *overruns[0].Offset, tc.warn, at[tc.warn])
				}
				continue
			}
			var le *tiff.LimitError
			if !errors.As(err, &le) {
				t.Errorf("%s, budget %d: got %v, want a LimitError", tc.name, budget, err)
				continue
			}
			want := tiff.LimitError{Page: 1, Tag: 273, Offset: at[tc.bad], What: "inflate", Have: tc.limit + 1, Limit: tc.limit}
			if *le != want {
				t.Errorf("%s, budget %d: got %+v, want %+v", tc.name, budget, *le, want)
			}
			if msg := le.Error(); !strings.HasPrefix(msg, "tiff: page 1 tag StripOffsets") {
				t.Errorf("%s: message %q", tc.name, msg)
			}
		}
	}
}

// TestStripArrayBudgetSumsPages: the walk charges every page's strip
// arrays before it reads them and refuses the first page that would take
// the sum over the budget, naming its StripOffsets entry.
func TestStripArrayBudgetSumsPages(t *testing.T) {
	t.Parallel()
	data, lay := encode(t, grey(16, 16), grey(16, 16), grey(16, 16)) // two strips a page
	info, err := walk(data)
	if err != nil {
		t.Fatal(err)
	}
	perPage := info.Held / 3
	lim := tiff.DefaultLimits
	lim.MemoryBudget = 2*perPage + perPage/2
	_, err = tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), lim)
	var le *tiff.LimitError
	// StripOffsets is entry 5 of the writer's IFDs (256 257 258 259 262 273 ...).
	entry := lay.IFDOffsets[2] + 2 + 12*5
	if !errors.As(err, &le) || le.What != "strip-array" || le.Page != 3 || le.Tag != 273 || le.Offset != entry || le.Limit != lim.MemoryBudget {
		t.Fatalf("got %v, want a strip-array LimitError on page 3 at byte %d", err, entry)
	}
	lim.MemoryBudget = info.Held
	if _, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), lim); err != nil {
		t.Fatalf("a budget of exactly what the walk holds: %v", err)
	}
}

// TestMemoryBudgetPolicy: the budget is MasterPolicy.MemoryBudget, it must
// be positive, and CheckMaster applies it to the walk and the decoding.
func TestMemoryBudgetPolicy(t *testing.T) {
	t.Parallel()
	pol := validate.DefaultMasterPolicy()
	if pol.MemoryBudget != tiff.DefaultMemoryBudget || pol.Validate() != nil {
		t.Fatalf("default policy: budget %d, %v", pol.MemoryBudget, pol.Validate())
	}
	pol.MemoryBudget = 0
	if err := pol.Validate(); err == nil || !strings.Contains(err.Error(), "memory budget") {
		t.Errorf("a zero memory budget: %v", err)
	}
	data, _ := encode(t, grey(16, 16), grey(16, 16))
	path := filepath.Join(t.TempDir(), "two.tif")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	pol.MemoryBudget = 1500 // one page's arrays, not two
	_, err := validate.CheckMaster(context.Background(), path, nil, pol)
	var le *tiff.LimitError
	var se *validate.StageError
	if !errors.As(err, &le) || le.What != "strip-array" || le.Page != 2 || !errors.As(err, &se) || se.Stage != validate.StageStructure {
		t.Fatalf("got %v, want a strip-array LimitError on page 2 at the structure stage", err)
	}
}

// TestUncountableOverBudgetIsRefused: a page the decoder must render to
// check (CCITT fax data cannot be counted) and whose band does not fit the
// budget is refused with a "memory" LimitError, not passed unchecked.
func TestUncountableOverBudgetIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(testCorpusOrSkip(t, "good"), "libtiffpic-g3test.tif")
	pol := validate.DefaultMasterPolicy()
	if _, err := validate.CheckMaster(context.Background(), path, nil, pol); err != nil {
		t.Fatalf("default budget: %v", err)
	}
	pol.MemoryBudget = 64 << 10
	_, err := validate.CheckMaster(context.Background(), path, nil, pol)
	var le *tiff.LimitError
	st, _ := os.Stat(path)
	if !errors.As(err, &le) || le.What != "memory" || le.Page != 1 || le.Tag != 273 || le.Offset <= 0 || le.Offset >= st.Size() || le.Have <= le.Limit {
		t.Fatalf("got %v, want a memory LimitError on page 1 naming its first strip", err)
	}
}

// TestMessageBudgetNamesSegment: the reader charges every segment it keeps
// for a message against Limits.MaxMessageBytes before it keeps it, and
// stops at the first that would overrun it, naming the message, the
// segment and its byte; the messages before it were delivered whole.
func TestMessageBudgetNamesSegment(t *testing.T) {
	t.Parallel()
	both := [2]string{"CZ", "CN"}
	small := fixtures.IFTMIN("1", both, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")
	big := fixtures.IFTMIN("2", both, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")
	for range 40 {
		// 300 bytes of text each: 12 KB of bytes alone (empty components
		// would not do: the writer drops them, and the store keeps them
		// for two bytes each).
		big.Body = append(big.Body, fixtures.S("FTX", "AAA", "", "", strings.Repeat("X", 300)))
	}
	var b bytes.Buffer
	if err := fixtures.WriteInterchange(&b, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "1", Msgs: []fixtures.Msg{small, big}}); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	var got []string
	_, err := edifact.Parse(bytes.NewReader(data), edifact.Limits{MaxMessageBytes: 8 << 10}, func(m *edifact.Message) error {
		got = append(got, m.Ref)
		return nil
	})
	var se *edifact.SyntaxError
	if !errors.As(err, &se) || !errors.Is(err, edifact.ErrMessageTooLarge) {
		t.Fatalf("got %v, want a SyntaxError for a message over its memory limit", err)
	}
	if se.Message != "2" || se.Tag != "FTX" || se.Segment <= len(small.Body) || se.Offset <= 0 || se.Offset >= int64(len(data)) ||
		!bytes.HasPrefix(data[se.Offset:], []byte("FTX+AAA")) || se.Name() != "edifact.message-too-large" {
		t.Errorf("got message %q segment %d (%s) at byte %d, name %s: want an FTX of message 2", se.Message, se.Segment, se.Tag, se.Offset, se.Name())
	}
	if len(got) != 1 || got[0] != "1" {
		t.Errorf("delivered %v, want message 1 only", got)
	}
	if _, err := edifact.Parse(bytes.NewReader(data), edifact.Limits{}, func(*edifact.Message) error { return nil }); err != nil {
		t.Errorf("the default limit: %v", err)
	}
}

// failingAt fails every read that touches bytes [from, to), as a storage
// with a bad sector would.
type failingAt struct {
	r        *bytes.Reader
	from, to int64
}

var errStorage = errors.New("storage gone")

func (f failingAt) ReadAt(p []byte, off int64) (int, error) {
	if off < f.to && off+int64(len(p)) > f.from {
		return 0, errStorage
	}
	return f.r.ReadAt(p, off)
}

// TestCountingKeepsStorageErrors: a read error while blocks are counted,
// before they are decoded or instead, is returned unchanged — a storage
// failure, never a verdict on the data.
func TestCountingKeepsStorageErrors(t *testing.T) {
	t.Parallel()
	const w, h, rps = 64, 64, 16
	data, at := fixtures.DeflateStrips(w, h, rps, []int64{w * rps, w * rps, w * rps, w * rps})
	info, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	r := failingAt{bytes.NewReader(data), at[2], at[3]} // the third strip
	for _, budget := range []int64{tiff.DefaultMemoryBudget, info.Held + 1} {
		_, err := tiff.DecodePages(r, info, tiff.DecodeOptions{PixelBudget: 1 << 20, MemoryBudget: budget})
		if !errors.Is(err, errStorage) {
			t.Errorf("budget %d: got %v, want the storage error", budget, err)
		}
		var te *tiff.FormatError
		if errors.As(err, &te) {
			t.Errorf("budget %d: a storage failure became %v", budget, te)
		}
	}
}
