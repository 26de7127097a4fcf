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

// counts are the table's columns for one run.
type counts struct {
	Items, Lost, Unknown, DupTerminal, DupParked, WrongPlace, Revived int
	RevivedMeasured                                                   bool
}

func (c counts) bad() int {
	return c.Lost + c.Unknown + c.DupTerminal + c.DupParked + c.WrongPlace + c.Revived
}

// verdict is what the checks found: the counts (items, each counted once
// per column), how many times each specific finding occurred, a few samples
// of each, and where items ended up.
type verdict struct {
	counts
	findings map[string]int
	samples  map[string][]string
	outcomes map[string]int // latest destination -> items
	foreign  int            // ledger events for no submitted item
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
func evaluate(keys []string, evs []ev, tasks []btask, mark int64, expect map[string]string) *verdict {
	v := &verdict{findings: map[string]int{}, samples: map[string][]string{}, outcomes: map[string]int{}}
	v.Items = len(keys)
	v.RevivedMeasured = mark >= 0
	known := map[string]bool{}
	for _, k := range keys {
		known[k] = true
	}
	byItem := map[string][]ev{}
	taskOwner := map[string]string{} // task id -> item, from the ledger
	for _, e := range evs {
		k := itemKey(e.Batch, e.Object)
		byItem[k] = append(byItem[k], e)
		if e.TaskID != "" {
			taskOwner[e.TaskID] = k
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
		var live, arch, quar, hold []btask
		for _, t := range tasksBy[k] {
			switch {
			case t.Queue == qIngest && t.State == "archived":
				arch = append(arch, t)
			case t.Queue == qIngest && t.State != "completed":
				live = append(live, t)
			case t.Queue == qQuarantine:
				quar = append(quar, t)
			case t.Queue == qAuditHold:
				hold = append(hold, t)
			}
		}
		var last *ev
		for i := range es {
			if es[i].Dest != "" {
				last = &es[i]
			}
		}
		history := func() string {
			var parts []string
			for _, e := range es {
				if e.Dest != "" || e.Type == "ing" || e.Type == "unq" || e.Type == "del" {
					parts = append(parts, e.String())
				}
			}
			var ts []string
			for _, t := range tasksBy[k] {
				ts = append(ts, t.String())
			}
			return fmt.Sprintf("%s: ledger [%s] broker [%s]", k, strings.Join(parts, ", "), strings.Join(ts, ", "))
		}

		// Lost, or unknown.
		settled := last != nil && isTerminal(last.Dest)
		switch {
		case settled:
			v.outcomes[last.Dest]++
		case len(live) > 0:
			v.Unknown++
			v.find(fUnknown, history())
			v.outcomes["(unsettled)"]++
		default:
			v.Lost++
			if last == nil {
				v.find(fLostNoEvent, history())
				v.outcomes["(no event)"]++
			} else {
				v.find(fmt.Sprintf(fLostStuck, last.Dest), history())
				v.outcomes["("+last.Dest+")"]++
			}
		}

		// Duplicated terminal events.
		dup := false
		flag := func(kind string) {
			dup = true
			v.find(kind, history())
		}
		perAttempt := map[int]int{}
		resolutions := map[string]int{}
		ing, discards := 0, 0
		done := false // the item has a terminal outcome and no replay since
		for _, e := range es {
			if e.Type == "ing" {
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
		if dup {
			v.DupTerminal++
		}

		// Parked copies.
		if len(quar)+len(hold) > 1 {
			v.DupParked++
			v.find(fDupParked, history())
		}

		// Where the broker holds it.
		if settled {
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
				v.WrongPlace++
				v.find(wrong, history())
			}
		}

		// Where its fixture says it goes.
		if settled && expect[k] != "" && last.Dest != expect[k] {
			touched := false
			for _, e := range es {
				touched = touched || e.Type == "unq" || e.Type == "del" || e.Operator != "" && e.ReplayOf != ""
			}
			if !touched {
				v.find(fmt.Sprintf(fInfoOutcome, strings.TrimSpace(fmt.Sprintf("%s → %s %s", expect[k], last.Dest, last.Code))), history())
			}
		}

		// Revived by a resubmission.
		if mark >= 0 {
			for _, e := range es {
				if e.Seq > mark {
					v.Revived++
					v.find(fRevived, history())
					break
				}
			}
		}
	}
	return v
}

func hasTask(ts []btask, id string) bool {
	for _, t := range ts {
		if t.ID == id {
			return true
		}
	}
	return false
}
