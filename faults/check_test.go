package faults

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hibiken/asynq"
)

// ev is one ledger row, as much of it as the checks need.
type ev struct {
	Seq                                                   int64
	ID, Type, Dest, Object, Batch, Corr, TaskID, ReplayOf string
	Operator, Code, Class                                 string
	Attempt                                               int
	// Members are the object ids an event records together with its own
	// (the messages of an interchange accepted in one chunk).
	Members []string
	member  bool // made up by the checks: a message's place in a chunk event
}

// decodeMembers reads the members column as Lazaret writes it (a JSON
// array of [object_id, number, offset, type]) and keeps the object ids.
func decodeMembers(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var rows [][]json.RawMessage
	if err := json.Unmarshal([]byte(s), &rows); err != nil {
		return nil, fmt.Errorf("members column: %w", err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		if len(r) == 0 || json.Unmarshal(r[0], &out[i]) != nil || out[i] == "" {
			return nil, fmt.Errorf("members column: entry %d has no object id: %.100s", i+1, s)
		}
	}
	return out, nil
}

func (e ev) String() string {
	s := fmt.Sprintf("#%d %s", e.Seq, e.Type)
	if e.Dest != "" {
		s += "→" + e.Dest
	}
	s += fmt.Sprintf(" a%d", e.Attempt)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Operator != "" {
		s += " by " + e.Operator
	}
	if e.member {
		s += " (member of a chunk)"
	} else if len(e.Members) > 0 {
		s += fmt.Sprintf(" (%d members)", len(e.Members))
	}
	return s
}

// btask is one task the broker holds.
type btask struct {
	Queue, State, ID string
	Type             string
	Batch, Object    string // from the payload (envelope, or held envelope)
	Attempt          int
	EventID          string // a held task's event
}

func (t btask) String() string {
	s := fmt.Sprintf("%s/%s %s", t.Queue, t.State, t.ID)
	if t.Attempt > 0 {
		s += fmt.Sprintf(" a%d", t.Attempt)
	}
	return s
}

// Queues and destinations, as Lazaret names them (README).
const (
	qIngest     = "ingest"
	qQuarantine = "quarantine"
	qAuditHold  = "audit-hold"
)

var routingTerminal = map[string]bool{"accept": true, "dead-letter": true, "quarantine": true, "audit-hold": true}

func isTerminal(d string) bool { return routingTerminal[d] || d == "discarded" }

// decodePayload attributes a task to an item: a validate task's envelope,
// or a held task's envelope.
func decodePayload(t *btask, payload []byte) {
	var p struct {
		BatchID  string `json:"batch_id"`
		ObjectID string `json:"object_id"`
		Attempt  int    `json:"attempt"`
		EventID  string `json:"event_id"`
		Envelope *struct {
			BatchID  string `json:"batch_id"`
			ObjectID string `json:"object_id"`
			Attempt  int    `json:"attempt"`
		} `json:"envelope"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return
	}
	t.Batch, t.Object, t.Attempt, t.EventID = p.BatchID, p.ObjectID, p.Attempt, p.EventID
	if p.Envelope != nil && p.Envelope.ObjectID != "" {
		t.Batch, t.Object = p.Envelope.BatchID, p.Envelope.ObjectID
		if p.Attempt == 0 {
			t.Attempt = p.Envelope.Attempt
		}
	}
}

// brokerTasks lists every task in Lazaret's three queues, every state but
// completed.
func brokerTasks(insp *asynq.Inspector) ([]btask, error) {
	type lister func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	listers := []lister{insp.ListPendingTasks, insp.ListActiveTasks, insp.ListScheduledTasks, insp.ListRetryTasks, insp.ListArchivedTasks}
	var out []btask
	for _, q := range []string{qIngest, qQuarantine, qAuditHold} {
		for _, list := range listers {
			for page := 1; ; page++ {
				tis, err := list(q, asynq.PageSize(1000), asynq.Page(page))
				if errors.Is(err, asynq.ErrQueueNotFound) {
					break
				}
				if err != nil {
					return out, fmt.Errorf("list %s: %w", q, err)
				}
				for _, ti := range tis {
					bt := btask{Queue: q, State: ti.State.String(), ID: ti.ID, Type: ti.Type}
					decodePayload(&bt, ti.Payload)
					out = append(out, bt)
				}
				if len(tis) < 1000 {
					break
				}
			}
		}
	}
	return out, nil
}

// counts are the table's columns for one run. The first ones count items
// (masters and interchanges); the Msg ones count the messages of the
// interchanges, each at most once per column.
type counts struct {
	Items, Lost, Unknown, DupTerminal, DupParked, WrongPlace, Revived int
	RevivedMeasured                                                   bool
	Interchanges, Messages, MsgLost, MsgUnknown, MsgDup, MsgWrong     int
}

func (c counts) bad() int {
	return c.Lost + c.Unknown + c.DupTerminal + c.DupParked + c.WrongPlace + c.Revived + c.MsgLost + c.MsgUnknown + c.MsgDup + c.MsgWrong
}

// verdict is what the checks found: the counts (items, each counted once
// per column), how many times each specific finding occurred, a few samples
// of each, and where items ended up.
type verdict struct {
	counts
	findings    map[string]int
	samples     map[string][]string
	outcomes    map[string]int // latest destination -> items
	msgOutcomes map[string]int // where each message is -> messages
	foreign     int            // ledger events for no submitted item
	settledAt   map[string]string
	wrong       map[string]bool // counted under wrong place (msg wrong for a message)
	isMsg       map[string]bool
}

// fReadModel: Lazaret's own answer to "where is it" disagrees with the
// ledger's events.
const fReadModel = "wrong place: `lazaret batch status` says %q, the ledger's events say %q"

// crossCheck compares where Lazaret's read model (`lazaret batch status
// --json`, the ledger's latest outcome per item and per message, accepted
// members included) says each settled item and message is with where the
// events put it; a disagreement counts under wrong place (msg wrong for a
// message) unless it is counted there already.
func (v *verdict) crossCheck(batchID string, status map[string]string) {
	for k, want := range v.settledAt {
		b, obj, _ := strings.Cut(k, "/")
		if b != batchID {
			continue
		}
		got := status[obj]
		if got == want {
			continue
		}
		kind := fmt.Sprintf(fReadModel, got, want)
		if v.isMsg[k] {
			kind = msgPrefix + kind
		}
		v.find(kind, k)
		if !v.wrong[k] {
			v.wrong[k] = true
			if v.isMsg[k] {
				v.MsgWrong++
			} else {
				v.WrongPlace++
			}
		}
	}
}

func (v *verdict) find(kind, sample string) {
	v.findings[kind]++
	if len(v.samples[kind]) < 6 {
		v.samples[kind] = append(v.samples[kind], sample)
	}
}

// Finding kinds, grouped by column (the prefix).
const (
	fLostNoEvent    = "lost: no ledger event, no broker task"
	fLostStuck      = "lost: ledger latest %q, no broker task"
	fUnknown        = "unknown: not settled, broker still holds a live task"
	fDupAttempt     = "dup terminal: several terminal events at one attempt"
	fDupIng         = "dup terminal: more than one ing event"
	fDupAfter       = "dup terminal: terminal event after a terminal event with no replay in between"
	fDupResolved    = "dup terminal: one failure resolved twice (replay and discard both won)"
	fDupDiscard     = "dup terminal: discarded twice"
	fDupParked      = "dup parked: several copies in quarantine + audit-hold"
	fWrongAccepted  = "wrong place: accepted, broker still holds a failure copy"
	fWrongDLMissing = "wrong place: dead-letter, task not in the ingest archived set"
	fWrongDLOther   = "wrong place: dead-letter, archived copy is another task"
	fWrongDLMany    = "wrong place: dead-letter, several archived copies"
	fWrongDLParked  = "wrong place: dead-letter, also parked"
	fWrongQMissing  = "wrong place: %s, no parked task in %s"
	fWrongQElse     = "wrong place: %s, copy in another place too"
	fWrongQStale    = "wrong place: %s, parked copy is of another failure event"
	fWrongDiscarded = "wrong place: discarded, broker still holds a copy"
	fWrongRequeued  = "wrong place: settled, but a live task is in ingest again"
	fWrongOrphan    = "wrong place: broker task of no submitted item"
	fRevived        = "revived: new ledger events after the resubmission"
	fInfoOutcome    = "info: no operator touched it, but it ended elsewhere than its fixture says (%s)"
	fWrongICLate    = "wrong place: interchange accepted, but a chunk of its messages was recorded after its ing"

	// Messages of interchanges. The per-item kinds above apply to a
	// message too, prefixed with "message ", and count in the Msg columns.
	msgPrefix      = "message "
	fMsgRejected   = "message wrong place: accepted, but its interchange ended %s (%s)"
	fMsgValIng     = "message wrong place: member of a chunk's ing without a val event of that attempt (or the reverse)"
	fMsgMemberMany = "message dup terminal: member of more than one accepted chunk"
	fMsgBoth       = "message dup terminal: member of an accepted chunk and also has events of its own with a destination"
)

// evaluate checks the ledger and the broker against the pipeline's promise
// for the submitted items (keys: batch/object). mark >= 0 is the ledger's
// last sequence number before a resubmission: any later event of an item is
// a revival.
//
// expect (may be nil) is where each item's fixture says it goes: an item no
// operator touched that ends elsewhere is reported as information (not
// counted: a killed worker can legitimately turn an accept into a retry or a
// dead letter).
//
// ics (may be nil) lists the interchanges among the items (key -> the keys
// of its messages, batch/"object#ref"). Whatever an interchange's envelope
// became, the item columns judge the interchange itself; then each of its
// messages is judged in the Msg columns. When the envelope was accepted,
// every message must be in exactly one place: a member of exactly one
// accepted chunk (an ing event of the interchange that holds it), or events
// of its own that settle it, judged like an item; never both, never
// neither. When the interchange ended anywhere else, no message of it may
// be accepted.
func evaluate(keys []string, evs []ev, tasks []btask, mark int64, expect map[string]string, ics map[string][]string) *verdict {
	v := &verdict{findings: map[string]int{}, samples: map[string][]string{}, outcomes: map[string]int{}, msgOutcomes: map[string]int{},
		settledAt: map[string]string{}, wrong: map[string]bool{}, isMsg: map[string]bool{}}
	v.Items = len(keys)
	v.RevivedMeasured = mark >= 0
	known := map[string]bool{}
	for _, k := range keys {
		known[k] = true
		for _, m := range ics[k] {
			known[m] = true
		}
	}
	byItem := map[string][]ev{}
	taskOwner := map[string]string{} // task id -> item, from the ledger
	memberOf := map[string][]ev{}    // message key -> its places in chunk ing events
	valMembers := map[string]int{}   // message key @ attempt -> val events holding it
	ingMembers := map[string]int{}   // message key @ attempt -> ing events holding it
	for _, e := range evs {
		k := itemKey(e.Batch, e.Object)
		byItem[k] = append(byItem[k], e)
		if e.TaskID != "" {
			taskOwner[e.TaskID] = k
		}
		for _, m := range e.Members {
			mk := itemKey(e.Batch, m)
			at := fmt.Sprintf("%s@%d", mk, e.Attempt)
			switch e.Type {
			case "val":
				valMembers[at]++
			case "ing":
				ingMembers[at]++
				memberOf[mk] = append(memberOf[mk], ev{Seq: e.Seq, ID: e.ID, Type: "ing", Dest: "accept", Object: m, Batch: e.Batch,
					Corr: e.Corr, TaskID: e.TaskID, ReplayOf: e.ReplayOf, Attempt: e.Attempt, member: true})
			}
			if !known[mk] {
				v.foreign++
			}
		}
	}
	for k := range byItem {
		if !known[k] {
			v.foreign++
		}
	}
	tasksBy := map[string][]btask{}
	for _, t := range tasks {
		k := itemKey(t.Batch, t.Object)
		if t.Object == "" {
			k = taskOwner[t.ID]
		}
		tasksBy[k] = append(tasksBy[k], t)
	}
	for k, ts := range tasksBy {
		if !known[k] {
			for _, t := range ts {
				v.WrongPlace++
				v.find(fWrongOrphan, t.String())
			}
		}
	}
	for _, k := range keys {
		es := byItem[k]
		sort.Slice(es, func(i, j int) bool { return es[i].Seq < es[j].Seq })
		j := v.judge(k, es, tasksBy[k], 0, mark, expect[k], false, false)
		v.Lost += b2i(j.lost)
		v.Unknown += b2i(j.unknown)
		v.DupTerminal += b2i(j.dup)
		v.DupParked += b2i(j.dupParked)
		v.Revived += b2i(j.revived)
		msgs, isIC := ics[k]
		if !isIC {
			v.WrongPlace += b2i(j.wrong)
			v.wrong[k] = j.wrong
			continue
		}
		v.Interchanges++
		accepted := j.settled && j.last.Dest == "accept"
		// The interchange's own ing comes last: no chunk of the same
		// delivery after it.
		if accepted && !j.wrong {
			for _, e := range es {
				if len(e.Members) > 0 && e.Type == "ing" && e.Seq > j.last.Seq && e.Attempt == j.last.Attempt && e.ReplayOf == j.last.ReplayOf {
					j.wrong = true
					v.find(fWrongICLate, j.history())
					break
				}
			}
		}
		v.WrongPlace += b2i(j.wrong)
		v.wrong[k] = j.wrong
		for _, mk := range msgs {
			v.isMsg[mk] = true
			v.Messages++
			own := byItem[mk]
			mes := append(append([]ev{}, own...), memberOf[mk]...)
			sort.Slice(mes, func(a, b int) bool { return mes[a].Seq < mes[b].Seq })
			// While the interchange is not accepted (not yet, or not at all)
			// it is what the item columns count; a message of it with no
			// place is no finding of its own.
			want := expect[mk]
			if !accepted {
				want = ""
			}
			mj := v.judge(mk, mes, tasksBy[mk], len(j.live), mark, want, true, !accepted)
			wrong, dup := mj.wrong, mj.dup
			if !accepted && j.settled {
				for _, e := range mes {
					if e.Dest == "accept" {
						wrong = true
						v.find(fmt.Sprintf(fMsgRejected, j.last.Dest, strings.TrimSpace(j.last.Code)), mj.history())
						break
					}
				}
			}
			nMember := len(memberOf[mk])
			ownDest := false
			for _, e := range own {
				ownDest = ownDest || e.Dest != ""
			}
			if nMember > 1 {
				dup = true
				v.find(fMsgMemberMany, mj.history())
			}
			if nMember > 0 && ownDest {
				dup = true
				v.find(fMsgBoth, mj.history())
			}
			for _, m := range memberOf[mk] {
				at := fmt.Sprintf("%s@%d", mk, m.Attempt)
				if valMembers[at] != ingMembers[at] {
					wrong = true
					v.find(fMsgValIng, mj.history()+fmt.Sprintf(" (attempt %d: %d val, %d ing)", m.Attempt, valMembers[at], ingMembers[at]))
					break
				}
			}
			v.MsgLost += b2i(mj.lost)
			v.MsgUnknown += b2i(mj.unknown)
			v.MsgDup += b2i(dup || mj.dupParked)
			v.MsgWrong += b2i(wrong)
			v.wrong[mk] = wrong
			v.Revived += b2i(mj.revived)
		}
	}
	return v
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// judged is what the checks found of one item or message.
type judged struct {
	settled                                       bool
	last                                          *ev
	live                                          []btask
	lost, unknown, dup, dupParked, wrong, revived bool
	history                                       func() string
}

// judge checks one item (or, with msg, one message of an interchange: its
// own events and its places in chunk events) against the ledger's and the
// broker's record: settled or not, terminal once, parked once, where the
// broker holds it. parentLive is how many live tasks its interchange has
// (a message is unsettled, not lost, while they run); quiet says that an
// unsettled one is neither lost nor unknown (its interchange is counted).
func (v *verdict) judge(k string, es []ev, ts []btask, parentLive int, mark int64, expect string, msg, quiet bool) judged {
	var j judged
	find := func(kind, sample string) {
		if msg {
			kind = msgPrefix + kind
		}
		v.find(kind, sample)
	}
	outcomes := v.outcomes
	if msg {
		outcomes = v.msgOutcomes
	}
	var arch, quar, hold []btask
	for _, t := range ts {
		switch {
		case t.Queue == qIngest && t.State == "archived":
			arch = append(arch, t)
		case t.Queue == qIngest && t.State != "completed":
			j.live = append(j.live, t)
		case t.Queue == qQuarantine:
			quar = append(quar, t)
		case t.Queue == qAuditHold:
			hold = append(hold, t)
		}
	}
	live := j.live
	for i := range es {
		if es[i].Dest != "" {
			j.last = &es[i]
		}
	}
	last := j.last
	j.history = func() string {
		var parts []string
		for _, e := range es {
			if e.Dest != "" || e.Type == "ing" || e.Type == "unq" || e.Type == "del" {
				parts = append(parts, e.String())
			}
		}
		var tss []string
		for _, t := range ts {
			tss = append(tss, t.String())
		}
		return fmt.Sprintf("%s: ledger [%s] broker [%s]", k, strings.Join(parts, ", "), strings.Join(tss, ", "))
	}
	history := j.history

	// Lost, or unknown.
	j.settled = last != nil && isTerminal(last.Dest)
	switch {
	case j.settled:
		outcomes[last.Dest]++
		v.settledAt[k] = last.Dest
	case quiet:
		outcomes["(interchange not accepted)"]++
	case len(live) > 0 || parentLive > 0:
		j.unknown = true
		find(fUnknown, history())
		outcomes["(unsettled)"]++
	default:
		j.lost = true
		if last == nil {
			find(fLostNoEvent, history())
			outcomes["(no event)"]++
		} else {
			find(fmt.Sprintf(fLostStuck, last.Dest), history())
			outcomes["("+last.Dest+")"]++
		}
	}

	// Duplicated terminal events.
	flag := func(kind string) {
		j.dup = true
		find(kind, history())
	}
	perAttempt := map[int]int{}
	resolutions := map[string]int{}
	ing, discards := 0, 0
	done := false // the item has a terminal outcome and no replay since
	for _, e := range es {
		// A chunk's ing is its messages', not the interchange's; an ing
		// that failed (its file could not be read: retry, dead-letter) took
		// nothing in.
		if e.Type == "ing" && len(e.Members) == 0 && e.Dest != "retry" && e.Dest != "dead-letter" {
			ing++
		}
		if (e.Type == "unq" || e.Type == "del" || e.Dest == "replayed" || e.Dest == "discarded") && e.ReplayOf != "" {
			resolutions[e.ReplayOf]++
		}
		switch {
		case e.Type == "unq" || e.Dest == "replayed":
			done = false
		case e.Dest == "discarded":
			discards++
			done = true
		case routingTerminal[e.Dest] && e.Operator != "" && e.ReplayOf != "":
			done = true // an operator's decision on an earlier failure (redrive to audit-hold)
		case routingTerminal[e.Dest]:
			perAttempt[e.Attempt]++
			if done {
				flag(fDupAfter)
			}
			done = true
		}
	}
	for _, n := range perAttempt {
		if n > 1 {
			flag(fDupAttempt)
			break
		}
	}
	if ing > 1 {
		flag(fDupIng)
	}
	if discards > 1 {
		flag(fDupDiscard)
	}
	for _, n := range resolutions {
		if n > 1 {
			flag(fDupResolved)
			break
		}
	}

	// Parked copies.
	if len(quar)+len(hold) > 1 {
		j.dupParked = true
		find(fDupParked, history())
	}

	// Where the broker holds it.
	if j.settled {
		wrong := ""
		switch last.Dest {
		case "accept":
			if len(arch)+len(quar)+len(hold) > 0 {
				wrong = fWrongAccepted
			}
		case "dead-letter":
			switch {
			case len(quar)+len(hold) > 0:
				wrong = fWrongDLParked
			case len(arch) == 0:
				wrong = fWrongDLMissing
			case last.TaskID != "" && !hasTask(arch, last.TaskID):
				wrong = fWrongDLOther
			case len(arch) > 1:
				wrong = fWrongDLMany
			}
		case "quarantine", "audit-hold":
			here, other := quar, hold
			q := qQuarantine
			if last.Dest == "audit-hold" {
				here, other, q = hold, quar, qAuditHold
			}
			switch {
			case len(here) == 0:
				wrong = fmt.Sprintf(fWrongQMissing, last.Dest, q)
			case len(other)+len(arch) > 0:
				wrong = fmt.Sprintf(fWrongQElse, last.Dest)
			case len(here) == 1 && here[0].EventID != "" && here[0].EventID != last.ID:
				wrong = fmt.Sprintf(fWrongQStale, last.Dest)
			}
		case "discarded":
			if len(arch)+len(quar)+len(hold) > 0 {
				wrong = fWrongDiscarded
			}
		}
		if wrong == "" && len(live) > 0 {
			wrong = fWrongRequeued
		}
		if wrong != "" {
			j.wrong = true
			find(wrong, history())
		}
	}

	// Where its fixture says it goes.
	if j.settled && expect != "" && last.Dest != expect {
		touched := false
		for _, e := range es {
			touched = touched || e.Type == "unq" || e.Type == "del" || e.Operator != "" && e.ReplayOf != ""
		}
		if !touched {
			find(fmt.Sprintf(fInfoOutcome, strings.TrimSpace(fmt.Sprintf("%s → %s %s", expect, last.Dest, last.Code))), history())
		}
	}

	// Revived by a resubmission.
	if mark >= 0 {
		for _, e := range es {
			if e.Seq > mark {
				j.revived = true
				find(fRevived, history())
				break
			}
		}
	}
	return j
}

func hasTask(ts []btask, id string) bool {
	for _, t := range ts {
		if t.ID == id {
			return true
		}
	}
	return false
}
