package directory_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
)

// marker stands in a test input where a finding's byte offset is expected
// (as § does in encoding/csv's tests); it is removed before parsing.
const marker = "§"

type want struct {
	kind               directory.Kind
	segment            int
	tag                string
	element, component int
}

// parseMarked builds an interchange around msg (UNH .. the segment before
// UNT, one segment a line; UNT is added with the right count), parses it
// and returns its message and the offsets of the markers, in order.
func parseMarked(t *testing.T, syntax, msg string) (*edifact.Message, []int64) {
	t.Helper()
	head := "UNB+UNOC:" + syntax + "+SENDER+RECIPIENT+261201:1200+IC1'\n"
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	unt := ""
	if lines[len(lines)-1] == marker { // the finding is at UNT
		lines, unt = lines[:len(lines)-1], marker
	}
	body := strings.Join(lines, "\n") + "\n" + unt + fmt.Sprintf("UNT+%d+1'\nUNZ+1+IC1'\n", len(lines)+1)
	text := head + body
	var offs []int64
	for {
		i := strings.Index(text, marker)
		if i < 0 {
			break
		}
		offs = append(offs, int64(i))
		text = text[:i] + text[i+len(marker):]
	}
	var got *edifact.Message
	_, err := edifact.Parse(bytes.NewReader([]byte(text)), edifact.Limits{}, func(m *edifact.Message) error {
		got = m.Clone()
		return nil
	})
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return got, offs
}

func TestFindingPositions(t *testing.T) {
	t.Parallel()
	const aperak = "UNH+1+APERAK:D:96A:UN'\nBGM+23+A1+9'\n"
	const baplie = "UNH+1+BAPLIE:D:95B:UN:SMDG20'\nBGM++B1+9'\nDTM+137:199507011200:201'\nTDT+20+V1++:172'\nLOC+5+NLRTM:139:6'\nDTM+178:9507010800:201'\n"
	const bayLoc = "LOC+147+0010184::5'\nMEA+WT++KGM:20000'\nRFF+BM:1'\n"
	long36 := strings.Repeat("X", 36)
	cases := []struct {
		name   string
		syntax string
		opt    directory.Options
		msg    string
		want   []want
	}{
		{name: "good APERAK", msg: aperak + "DTM+137:20261201:102'\nRFF+ACW:X1'\nNAD+MS+SENDER::92'\nERC+12'\nFTX+AAO+++TEXT'"},
		{name: "good BAPLIE", msg: baplie + bayLoc + "EQD+CN+CSQU3054383+2210:102:5+++5'\nDGS+IMD+3.1+1999+023:CEL'"},
		{name: "segment not in the message", msg: aperak + "§QTY+1:2'",
			want: []want{{directory.SegmentUnexpected, 3, "QTY", 0, 0}}},
		{name: "segment out of order", msg: aperak + "NAD+MS+SENDER::92'\n§DTM+137:20261201:102'",
			want: []want{{directory.SegmentUnexpected, 4, "DTM", 0, 0}}},
		{name: "mandatory segment missing", msg: "UNH+1+BAPLIE:D:95B:UN'\nBGM++B1+9'\n§TDT+20+V1'\nLOC+5+NLRTM:139:6'\nDTM+178:9507010800:201'",
			want: []want{{directory.SegmentMissing, 3, "TDT", 0, 0}}},
		{name: "mandatory group missing", msg: "UNH+1+BAPLIE:D:95B:UN'\nBGM++B1+9'\nDTM+137:199507011200:201'\n§",
			want: []want{{directory.GroupMissing, 4, "UNT", 0, 0}}},
		{name: "mandatory segment missing in a group", msg: baplie + "LOC+147+0010184::5'\n§RFF+BM:1'",
			want: []want{{directory.SegmentMissing, 8, "RFF", 0, 0}}},
		{name: "segment repeated", msg: aperak + "§BGM+23+A2+9'",
			want: []want{{directory.SegmentRepeated, 3, "BGM", 0, 0}}},
		{name: "group repeated", msg: "UNH+1+BAPLIE:D:95B:UN'\nBGM++B1+9'\nDTM+137:199507011200:201'\n" +
			strings.Repeat("TDT+20+V1'\nLOC+5+NLRTM:139:6'\nDTM+178:9507010800:201'\n", 3) + "§TDT+20+V1'\nLOC+5+NLRTM:139:6'\nDTM+178:9507010800:201'",
			want: []want{{directory.GroupRepeated, 13, "TDT", 0, 0}}},
		{name: "mandatory element empty", msg: aperak + "FTX+§++++EN'",
			want: []want{{directory.ElementMissing, 3, "FTX", 1, 0}}},
		{name: "mandatory element missing at the end", msg: aperak + "DTM§'",
			want: []want{{directory.ElementMissing, 3, "DTM", 1, 0}}},
		{name: "mandatory component empty", msg: aperak + "RFF+§:123'",
			want: []want{{directory.ComponentMissing, 3, "RFF", 1, 1}}},
		{name: "mandatory component missing at the end", msg: aperak + "CNT+2§'",
			want: []want{{directory.ComponentMissing, 3, "CNT", 1, 2}}},
		{name: "element extra", msg: aperak + "DTM+137:20261201:102+§X'",
			want: []want{{directory.ElementExtra, 3, "DTM", 2, 0}}},
		{name: "component extra", msg: aperak + "DTM+137:20261201:102:§X'\nFTX+AAO:§Y'",
			want: []want{{directory.ComponentExtra, 3, "DTM", 1, 4}, {directory.ComponentExtra, 4, "FTX", 1, 2}}},
		{name: "repetition extra", syntax: "4", msg: aperak + "DTM+137:20261201:102*§137:20261202:102'",
			want: []want{{directory.RepetitionExtra, 3, "DTM", 1, 0}}},
		{name: "numeric with a letter", msg: aperak + "CNT+2:12§A'",
			want: []want{{directory.Representation, 3, "CNT", 1, 2}}},
		{name: "numeric sign and decimal marks", msg: aperak + "CNT+2:-123.45'\nCNT+2:12,5'\nCNT+2:1.2§.3'",
			want: []want{{directory.Representation, 5, "CNT", 1, 2}}},
		{name: "numeric with the declared decimal mark", opt: directory.Options{Decimal: '.'}, msg: aperak + "CNT+2:12.5'\nCNT+2:12§,5'",
			want: []want{{directory.Representation, 4, "CNT", 1, 2}}},
		{name: "alphabetic with a digit", msg: "UNH+1+APERAK:D:96A:UN++1:§9'\nBGM+23+A1+9'",
			want: []want{{directory.Representation, 1, "UNH", 4, 2}}},
		{name: "too long", msg: "UNH+1+APERAK:D:96A:UN'\nBGM++§" + long36 + "'\nCNT+2:§1234567890123456789'",
			want: []want{{directory.TooLong, 2, "BGM", 2, 0}, {directory.TooLong, 3, "CNT", 1, 2}}},
		{name: "too long counts characters, not release characters", msg: aperak + "RFF+ACW:" + strings.Repeat("?+", 35) + "'\nRFF+ACW:§" + strings.Repeat("?+", 36) + "'",
			want: []want{{directory.TooLong, 4, "RFF", 1, 2}}},
		{name: "too short", msg: baplie + "LOC+147+0010184::5'\nMEA+WT++KGM:20000'\nTMP+2+§-5:CEL'\nRFF+BM:1'",
			want: []want{{directory.TooShort, 9, "TMP", 2, 1}}},
		{name: "code not in the list", msg: "UNH+1+APERAK:D:96A:UN'\nBGM+§XYZ+A1+§§" + long36 + "'",
			want: []want{{directory.CodeUnknown, 2, "BGM", 1, 1}, {directory.TooLong, 2, "BGM", 3, 0}, {directory.CodeUnknown, 2, "BGM", 3, 0}}},
		{name: "code of another list is not checked", msg: baplie + bayLoc + "EQD+CN+C1+2210:102:5'\nEQD+CN+C2+§2210::6'\nEQD+CN+C3+§2210'",
			want: []want{{directory.CodeUnknown, 11, "EQD", 3, 1}, {directory.CodeUnknown, 12, "EQD", 3, 1}}},
		{name: "several findings in one message", msg: "UNH+1+APERAK:D:96A:UN'\nBGM+§XYZ'\n§QTY+1'\nDTM+§:20261201'\nRFF+ACW:X1+§X'",
			want: []want{{directory.CodeUnknown, 2, "BGM", 1, 1}, {directory.SegmentUnexpected, 3, "QTY", 0, 0},
				{directory.ComponentMissing, 4, "DTM", 1, 1}, {directory.ElementExtra, 5, "RFF", 2, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			syntax := tc.syntax
			if syntax == "" {
				syntax = "3"
			}
			m, offs := parseMarked(t, syntax, tc.msg)
			def := directory.Lookup(m.Version, m.Release, m.Type)
			if def == nil {
				t.Fatalf("no directory for %s:%s:%s", m.Type, m.Version, m.Release)
			}
			got := def.Check(m, tc.opt)
			if len(offs) != len(tc.want) {
				t.Fatalf("test case: %d markers, %d findings wanted", len(offs), len(tc.want))
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d findings, want %d:\n%s", len(got), len(tc.want), findings(got))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Kind != w.kind || g.Segment != w.segment || g.Tag != w.tag || g.Element != w.element || g.Component != w.component || g.Offset != offs[i] {
					t.Errorf("finding %d: %s\nwant %s segment %d (%s) element %d:%d at byte %d", i, g, w.kind, w.segment, w.tag, w.element, w.component, offs[i])
				}
				if g.Reason == "" {
					t.Errorf("finding %d has no reason", i)
				}
			}
		})
	}
}

func findings(fs []directory.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}

// TestEveryKindIsPinned keeps TestFindingPositions in step with Kinds.
func TestEveryKindIsPinned(t *testing.T) {
	t.Parallel()
	pinned := map[directory.Kind]bool{}
	for _, k := range []directory.Kind{directory.SegmentUnexpected, directory.SegmentMissing, directory.GroupMissing, directory.SegmentRepeated,
		directory.GroupRepeated, directory.ElementMissing, directory.ComponentMissing, directory.ElementExtra, directory.ComponentExtra,
		directory.RepetitionExtra, directory.Representation, directory.TooLong, directory.TooShort, directory.CodeUnknown} {
		pinned[k] = true
	}
	for _, k := range directory.Kinds() {
		if !pinned[k] {
			t.Errorf("kind %s has no position test", k)
		}
		if k.Syntax() == edifact.CodeUnspecified {
			t.Errorf("kind %s has no 0085 code", k)
		}
	}
}

// TestFindingQuotesValueShort: a finding that quotes the value it is about
// quotes no more than its first bytes, however long the value: a segment
// may be 64 KiB, and a message's findings are a thousand (see the policy's
// max_findings), each quoted with up to four bytes a byte. Before, a NAD
// function (3035, an..3) of 60,000 bytes was quoted whole.
func TestFindingQuotesValueShort(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("\x01", 60_000)
	m, _ := parseMarked(t, "3", "UNH+1+APERAK:D:96A:UN'\nBGM+"+long+"+A1+9'\nCNT+2:"+long+"'\nNAD+MS1"+long+"'")
	def := directory.Lookup(m.Version, m.Release, m.Type)
	got := def.Check(m, directory.Options{})
	n := 0
	for _, f := range got {
		if f.Kind != directory.CodeUnknown && f.Kind != directory.Representation {
			continue
		}
		n++
		if len(f.Reason) > 1000 || !strings.Contains(f.Reason, `\x01\x01"...`) {
			t.Errorf("%s: %d-byte reason %.120q...", f.Kind, len(f.Reason), f.Reason)
		}
	}
	if n != 3 {
		t.Fatalf("%d findings quoting the value, want 3 (BGM 1001, CNT 6066, NAD 3035):\n%s", n, findings(got))
	}
}
