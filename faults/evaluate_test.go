package faults

import "testing"

// TestEvaluate checks the checks on made-up ledgers and brokers; it needs
// no service and runs in every `go test ./...`.
func TestEvaluate(t *testing.T) {
	const b = "B"
	seq := int64(0)
	e := func(obj, typ, dest string, attempt int, more ...string) ev {
		seq++
		x := ev{Seq: seq, ID: obj + "-" + typ + "-" + dest, Type: typ, Dest: dest, Object: obj, Batch: b, Attempt: attempt}
		if len(more) > 0 {
			x.TaskID = more[0]
		}
		if len(more) > 1 {
			x.ReplayOf = more[1]
		}
		if len(more) > 2 {
			x.Operator = more[2]
		}
		return x
	}
	task := func(obj, q, state, id string) btask {
		return btask{Queue: q, State: state, ID: id, Batch: b, Object: obj}
	}
	dl := e("dl", "val", "dead-letter", 1, "t-dl")
	qa := e("q", "qua", "quarantine", 1, "t-q")
	race := e("race", "val", "dead-letter", 1, "t-race")
	evs := []ev{
		e("ok", "ing", "accept", 1),
		e("twice", "ing", "accept", 1), e("twice", "ing", "accept", 2),
		dl,
		qa,
		e("qmiss", "qua", "quarantine", 1),
		e("q2", "qua", "quarantine", 1),
		race, e("race", "unq", "replayed", 2, "", race.ID, "op"), e("race", "del", "discarded", 1, "", race.ID, "op"),
		e("disc", "val", "dead-letter", 1, "t-disc"), e("disc", "del", "discarded", 1, "", "x", "op"),
		e("retry", "val", "retry", 1),
		e("sub", "ins", "submitted", 1),
		e("again", "val", "dead-letter", 1, "t-a1"), e("again", "val", "dead-letter", 2, "t-a2"),
	}
	mark := seq
	evs = append(evs, e("rev", "val", "dead-letter", 1, "t-rev"))
	seq++
	evs = append(evs, ev{Seq: seq, ID: "late", Type: "ing", Dest: "accept", Object: "rev", Batch: b, Attempt: 1})
	tasks := []btask{
		task("dl", qIngest, "archived", "t-dl"),
		{Queue: qQuarantine, State: "pending", ID: "held-q", Batch: b, Object: "q", EventID: qa.ID},
		task("q2", qQuarantine, "pending", "h1"), task("q2", qQuarantine, "pending", "h2"),
		task("disc", qIngest, "archived", "t-disc"),
		task("retry", qIngest, "retry", "t-retry"),
		task("again", qIngest, "archived", "t-a2"),
		task("nobody", qQuarantine, "pending", "h-x"),
		task("rev", qIngest, "archived", "t-rev"),
	}
	keys := []string{}
	for _, o := range []string{"ok", "twice", "dl", "q", "qmiss", "q2", "race", "disc", "retry", "sub", "none", "again", "rev"} {
		keys = append(keys, itemKey(b, o))
	}
	v := evaluate(keys, evs, tasks, mark, map[string]string{itemKey(b, "dl"): "accept"}, nil)
	want := counts{Items: 13, Lost: 2, Unknown: 1, DupTerminal: 4, DupParked: 1, WrongPlace: 4, Revived: 1, RevivedMeasured: true}
	if v.counts != want {
		t.Errorf("counts %+v\nwant   %+v\nfindings %v", v.counts, want, v.findings)
	}
	for _, k := range []string{"info: no operator touched it, but it ended elsewhere than its fixture says (accept → dead-letter)", fLostNoEvent, fUnknown, fDupIng, fDupResolved, fDupAfter, fDupParked, fWrongDiscarded, fWrongOrphan, fRevived,
		"wrong place: quarantine, no parked task in quarantine", `lost: ledger latest "submitted", no broker task`} {
		if v.findings[k] == 0 {
			t.Errorf("no finding %q; got %v", k, v.findings)
		}
	}
}
