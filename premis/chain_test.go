package premis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/premis"
)

func chainEvent() premis.Event {
	off, page := int64(2916), 3
	return premis.Event{ID: "00000000-0000-4000-8000-000000000001", Key: "k", Type: premis.FixityCheck,
		DateTime: time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC), Detail: "d", Outcome: premis.Failure, Note: "n",
		Class: premis.Structural, Code: "fixity.mismatch", Message: "m", Position: premis.Position{Offset: &off, Page: &page,
			Segment: 1, Element: 2, Component: 3, Tag: "t"}, Destination: premis.DeadLetter, ObjectID: "o", BatchID: "b",
		CorrelationID: "c", Kind: "tiff", SHA256: "s", Size: 9, PUID: "fmt/353", Path: "/p", Attempt: 1, Retries: 2,
		TaskID: "task", ReplayOf: "r", Agent: "lazaret/test", Operator: "op", Envelope: []byte(`{"v":1}`)}
}

// TestChainHashIsStable pins the encoding: changing it would make every
// stored ledger fail verification. The vector was also computed from the
// doc of ChainHash alone, by another implementation.
func TestChainHashIsStable(t *testing.T) {
	const want = "ccd1e070632f8e3f48a96d16b6f7e74bf3883aff59ac0bafe0eccf7651f257d4"
	e := chainEvent()
	if got := premis.ChainHash(premis.ChainGenesis, &e); got != want {
		t.Fatalf("ChainHash = %s, want %s", got, want)
	}
}

// TestChainHashCoversEveryColumn: changing any stored column, or the
// predecessor, changes the hash; the chain fields and how a time or an
// empty envelope is represented do not.
func TestChainHashCoversEveryColumn(t *testing.T) {
	base := chainEvent()
	want := premis.ChainHash(premis.ChainGenesis, &base)
	other, zero := int64(1), 0
	for name, change := range map[string]func(*premis.Event){
		"id": func(e *premis.Event) { e.ID += "x" }, "key": func(e *premis.Event) { e.Key += "x" },
		"type": func(e *premis.Event) { e.Type = premis.Ingestion }, "datetime": func(e *premis.Event) { e.DateTime = e.DateTime.Add(time.Microsecond) },
		"detail": func(e *premis.Event) { e.Detail += "x" }, "outcome": func(e *premis.Event) { e.Outcome = premis.Success },
		"note": func(e *premis.Event) { e.Note += "x" }, "class": func(e *premis.Event) { e.Class = "" },
		"code": func(e *premis.Event) { e.Code += "x" }, "message": func(e *premis.Event) { e.Message += "x" },
		"byte_offset": func(e *premis.Event) { e.Offset = &other }, "byte_offset null": func(e *premis.Event) { e.Offset = nil },
		"page": func(e *premis.Event) { e.Page = &zero }, "page null": func(e *premis.Event) { e.Page = nil },
		"segment": func(e *premis.Event) { e.Segment++ }, "element": func(e *premis.Event) { e.Element++ },
		"component": func(e *premis.Event) { e.Component++ }, "tag": func(e *premis.Event) { e.Tag += "x" },
		"destination": func(e *premis.Event) { e.Destination = premis.Accepted }, "object_id": func(e *premis.Event) { e.ObjectID += "x" },
		"batch_id": func(e *premis.Event) { e.BatchID += "x" }, "correlation_id": func(e *premis.Event) { e.CorrelationID += "x" },
		"kind": func(e *premis.Event) { e.Kind += "x" }, "sha256": func(e *premis.Event) { e.SHA256 += "x" },
		"size": func(e *premis.Event) { e.Size++ }, "puid": func(e *premis.Event) { e.PUID += "x" },
		"path": func(e *premis.Event) { e.Path += "x" }, "attempt": func(e *premis.Event) { e.Attempt++ },
		"retries": func(e *premis.Event) { e.Retries++ }, "task_id": func(e *premis.Event) { e.TaskID += "x" },
		"replay_of": func(e *premis.Event) { e.ReplayOf += "x" }, "agent": func(e *premis.Event) { e.Agent += "x" },
		"operator": func(e *premis.Event) { e.Operator += "x" }, "envelope": func(e *premis.Event) { e.Envelope = []byte(`{"v":2}`) },
		// Field boundaries are length-prefixed: moving a byte from one text
		// column to the next changes the hash.
		"boundary": func(e *premis.Event) { e.Detail, e.Outcome = "df", premis.Outcome(string(premis.Failure)[1:]) },
	} {
		e := chainEvent()
		change(&e)
		if premis.ChainHash(premis.ChainGenesis, &e) == want {
			t.Errorf("changing %s does not change the hash", name)
		}
	}
	if premis.ChainHash(strings.Repeat("1", 64), &base) == want {
		t.Error("the predecessor's hash does not change the hash")
	}
	same := chainEvent()
	same.Seq, same.PrevHash, same.Hash = 7, "p", "h"
	same.DateTime = same.DateTime.In(time.FixedZone("CET", 3600))
	if premis.ChainHash(premis.ChainGenesis, &same) != want {
		t.Error("the chain fields or the time zone change the hash")
	}
	a, b := chainEvent(), chainEvent()
	a.Envelope, b.Envelope = nil, []byte{}
	if premis.ChainHash(premis.ChainGenesis, &a) != premis.ChainHash(premis.ChainGenesis, &b) {
		t.Error("a NULL and an empty envelope hash differently")
	}
}

func TestParseHead(t *testing.T) {
	h := premis.Head{Count: 12, Hash: strings.Repeat("ab", 32)}
	got, err := premis.ParseHead(h.String())
	if err != nil || got != h {
		t.Fatalf("ParseHead(%s) = %v, %v", h, got, err)
	}
	for _, bad := range []string{"", "12", "x:" + h.Hash, "-1:" + h.Hash, "12:abc", "12x:" + h.Hash} {
		if _, err := premis.ParseHead(bad); err == nil {
			t.Errorf("ParseHead(%q) accepted", bad)
		}
	}
}

// memAuditor is a ledger in memory: rows, the successive answers of
// RecordedHead, and the guards' verdict.
type memAuditor struct {
	rows   []premis.Event
	heads  []premis.Head // one per RecordedHead call; the last repeats
	calls  int
	guards error
}

func (m *memAuditor) Guards(context.Context) error { return m.guards }

func (m *memAuditor) RecordedHead(context.Context) (premis.Head, bool, error) {
	if len(m.heads) == 0 {
		return premis.Head{}, false, nil
	}
	h := m.heads[min(m.calls, len(m.heads)-1)]
	m.calls++
	return h, true, nil
}

func (m *memAuditor) Walk(ctx context.Context, fn func(premis.Event, error) error) error {
	return m.WalkFrom(ctx, 0, fn)
}

func (m *memAuditor) WalkFrom(_ context.Context, seq int64, fn func(premis.Event, error) error) error {
	for _, e := range m.rows {
		if e.Seq < seq {
			continue
		}
		if err := fn(e, nil); err != nil {
			return err
		}
	}
	return nil
}

// CheckReadModel: a ledger in memory keeps no read model.
func (m *memAuditor) CheckReadModel(context.Context) (string, error) { return "", nil }

// chain returns n chained events and the head after each (heads[0] is the
// empty ledger's).
func chain(n int) ([]premis.Event, []premis.Head) {
	heads := []premis.Head{{Hash: premis.ChainGenesis}}
	var evs []premis.Event
	for i := range n {
		e := chainEvent()
		e.ID, e.Key, e.Seq, e.PrevHash = string(rune('a'+i)), string(rune('a'+i)), int64(10*(i+1)), heads[i].Hash
		e.Hash = premis.ChainHash(e.PrevHash, &e)
		evs = append(evs, e)
		heads = append(heads, premis.Head{Count: int64(i + 1), Hash: e.Hash})
	}
	return evs, heads
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	evs, heads := chain(4)
	edited := append([]premis.Event(nil), evs...)
	edited[1].Message = "edited"
	edited[2].Outcome = premis.Success // a second broken row: counted, not listed
	cases := []struct {
		name    string
		a       *memAuditor
		anchors []premis.Head
		want    []premis.ProblemKind
		seq     int64 // of the first problem
	}{
		{"intact", &memAuditor{rows: evs, heads: heads[4:]}, nil, nil, 0},
		{"intact, anchored", &memAuditor{rows: evs, heads: heads[4:]}, []premis.Head{heads[0], heads[2], heads[4]}, nil, 0},
		// Two events appended between the head read before the walk and the
		// one after: not tampering.
		{"appends during the walk", &memAuditor{rows: evs, heads: []premis.Head{heads[2], heads[4]}}, nil, nil, 0},
		{"edited rows", &memAuditor{rows: edited, heads: heads[4:]}, nil, []premis.ProblemKind{premis.ProblemLink}, 20},
		{"newest removed", &memAuditor{rows: evs[:3], heads: heads[4:]}, nil, []premis.ProblemKind{premis.ProblemTruncated}, 0},
		{"removed in the middle", &memAuditor{rows: append(append([]premis.Event(nil), evs[:1]...), evs[2:]...), heads: heads[4:]}, nil,
			[]premis.ProblemKind{premis.ProblemLink, premis.ProblemTruncated}, 30},
		{"head says another hash", &memAuditor{rows: evs, heads: []premis.Head{{Count: 4, Hash: heads[3].Hash}}}, nil,
			[]premis.ProblemKind{premis.ProblemHead}, 40},
		{"events past the head", &memAuditor{rows: evs, heads: heads[3:4]}, nil, []premis.ProblemKind{premis.ProblemHead}, 0},
		{"no head", &memAuditor{rows: evs}, nil, []premis.ProblemKind{premis.ProblemHead}, 0},
		{"rewritten after an anchor", &memAuditor{rows: evs[:3], heads: heads[3:4]}, []premis.Head{heads[4]}, []premis.ProblemKind{premis.ProblemAnchor}, 0},
		{"anchor off the chain", &memAuditor{rows: evs, heads: heads[4:]}, []premis.Head{{Count: 2, Hash: heads[1].Hash}}, []premis.ProblemKind{premis.ProblemAnchor}, 20},
		{"guards", &memAuditor{rows: evs, heads: heads[4:], guards: &premis.GuardError{Ledger: "l", Guards: []string{"a: missing", "b: disabled"}}}, nil,
			[]premis.ProblemKind{premis.ProblemGuard, premis.ProblemGuard}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := premis.Verify(ctx, tc.a, tc.anchors...)
			if err != nil {
				t.Fatal(err)
			}
			var got []premis.ProblemKind
			for _, p := range v.Problems {
				got = append(got, p.Kind)
			}
			if strings.Join(kinds(got), ",") != strings.Join(kinds(tc.want), ",") {
				t.Fatalf("problems %v, want %v: %s", got, tc.want, v)
			}
			if len(got) > 0 && v.Problems[0].Seq != tc.seq {
				t.Errorf("first problem at seq %d, want %d: %s", v.Problems[0].Seq, tc.seq, v.Problems[0])
			}
			if len(got) == 0 && v.String() != "4 events, chain intact, head "+heads[4].Hash {
				t.Errorf("summary %q", v)
			}
		})
	}
	v, _ := premis.Verify(ctx, &memAuditor{rows: edited, heads: heads[4:]})
	if v.BrokenLinks != 2 {
		t.Errorf("broken links %d, want 2", v.BrokenLinks)
	}
	boom := errors.New("boom")
	if _, err := premis.Verify(ctx, &memAuditor{guards: boom}); !errors.Is(err, boom) {
		t.Errorf("unreadable guards: %v", err)
	}
	var ge *premis.GuardError
	if err := error(&premis.GuardError{Ledger: "l", Guards: []string{"g: missing"}}); !errors.Is(err, premis.ErrTampered) || !errors.As(err, &ge) {
		t.Error("GuardError does not wrap ErrTampered")
	}
}

func kinds(ks []premis.ProblemKind) []string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return s
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"plain text":          "plain text",
		"two\nlines\tand tab": "two\nlines\tand tab",
		"nul\x00byte":         `nul\x00byte`,
		"\x1b[2Jclear":        `\x1b[2Jclear`,
		"bad \xff utf8":       "bad \uFFFD utf8",
		"café":                "café",
		"c1 \u0085 control":   `c1 \x85 control`,
	}
	for in, want := range cases {
		if got := premis.Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
