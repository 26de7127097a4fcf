package directory

import (
	"bufio"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// eagerTables parses every line of the tables at once, as the directory
// did before it parsed them on first lookup.
func eagerTables(t *testing.T, text string) map[key]*Message {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var codes []*CodeList
	var segs []*Segment
	codeOf := func(id int) *CodeList {
		if id < 0 || id >= len(codes) {
			return nil
		}
		return codes[id]
	}
	segOf := func(id int) (*Segment, error) {
		if id < 0 || id >= len(segs) {
			t.Fatalf("segment %d", id)
		}
		return segs[id], nil
	}
	out := map[key]*Message{}
	for sc.Scan() {
		text := sc.Text()
		if text == "" || text[0] == '#' {
			continue
		}
		f := strings.Fields(text)
		switch f[0] {
		case "L":
			if f[1] != strconv.Itoa(len(codes)) {
				t.Fatal("code list out of order")
			}
			codes = append(codes, newCodeList(f[2:]))
		case "S":
			s := &Segment{Tag: f[2], Any: len(f) == 3 && (f[2] == "UNH" || f[2] == "UNT")}
			for _, tok := range f[3:] {
				e, err := parseElement(tok, codeOf)
				if err != nil {
					t.Fatal(err)
				}
				s.Elements = append(s.Elements, e)
			}
			s.lastMandatory = lastMandatory(s.Elements)
			segs = append(segs, s)
		case "M":
			m := &Message{Version: f[1], Release: f[2], Type: f[3]}
			p := &treeParser{toks: f[4:], segs: segOf}
			table, err := p.nodes(0)
			if err != nil || p.i != len(p.toks) {
				t.Fatalf("%s: %v", f[3], err)
			}
			m.Table, m.keys, m.depth = table, link(table), p.maxDepth+1
			out[key{m.Version, m.Release, m.Type}] = m
		default:
			t.Fatalf("record %q", f[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLazyTablesAreEager: every table Lookup parses on first use, with
// its segments and code lists, is the one parsing every line at once
// gave; looked up from several goroutines at once, each is parsed once.
func TestLazyTablesAreEager(t *testing.T) {
	t.Parallel()
	want := eagerTables(t, tablesText)
	lazy, err := indexTables(tablesText)
	if err != nil {
		t.Fatal(err)
	}
	if len(lazy.msgs) != len(want) || len(want) != 118 {
		t.Fatalf("%d tables indexed, %d parsed at once; want 118", len(lazy.msgs), len(want))
	}
	got := make(map[key]*Message)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for k, lm := range lazy.msgs {
				m := lazy.message(lm)
				mu.Lock()
				if prev, ok := got[k]; ok && prev != m {
					t.Errorf("%v: parsed twice", k)
				}
				got[k] = m
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for k, w := range want {
		if g := got[k]; !reflect.DeepEqual(g, w) {
			t.Errorf("%v: the lazily parsed table differs from the one parsed at once", k)
		}
	}
}
