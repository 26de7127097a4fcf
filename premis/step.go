package premis

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Step is one of the events a decision's record holds beside its own: the
// fixity check, format identification and validation that an accepted
// master's ingestion event follows. The ledger stores the decision as one
// row (one set of index entries, one chain link) instead of four; reads
// hand each step back as a PREMIS event of its own (Event.Expand), whose
// object, item, task, attempt, agent, time, digest and size are the
// record's, and whose hash is the record's, which covers the step.
type Step struct {
	Type    EventType `json:"type"`
	Outcome Outcome   `json:"outcome"` // Success or Warning: a step that fails is a failure's own event
	Detail  string    `json:"detail,omitempty"`
	Note    string    `json:"note,omitempty"`
	PUID    string    `json:"puid,omitempty"`
}

// MaxSteps bounds the steps of one record: step ids are the record's with
// its last hex digit counted on (StepID), which leaves room for three.
const MaxSteps = 3

// StepID is the id of the i-th (0-based) step of the record with id: the
// record's UUID, whose last hex digit a record with steps keeps a multiple
// of four (Prepare), plus i+1. So a step's id is a UUID as unique as the
// record's, time-ordered beside it, and StepOf finds the record again
// without a lookup table.
func StepID(id string, i int) string {
	if id == "" || i < 0 || i >= MaxSteps {
		return ""
	}
	v := hexDigit(id[len(id)-1])
	if v < 0 {
		return ""
	}
	return id[:len(id)-1] + string("0123456789abcdef"[(v&^3)+i+1])
}

// StepOf is the record id and step index a step id names, when id may be
// one (its last hex digit is not a multiple of four); a lookup by id
// finds the record and checks it holds that step.
func StepOf(id string) (record string, i int, ok bool) {
	if len(id) != 36 {
		return "", 0, false
	}
	v := hexDigit(id[len(id)-1])
	if v < 0 || v&3 == 0 {
		return "", 0, false
	}
	return id[:len(id)-1] + string("0123456789abcdef"[v&^3]), v&3 - 1, true
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

// stepKey is the idempotency key of a record's step: derived from the
// record's, which the ledger holds unique per item; a step is never
// stored, or looked up by key, on its own.
func stepKey(recordKey string, t EventType) string {
	h := sha256.Sum256([]byte(recordKey + "\x00step\x00" + string(t)))
	return hex.EncodeToString(h[:])
}

// Expand is the events record e holds, in the order they happened: each of
// its steps, then e itself without them. An event without steps is itself.
func (e Event) Expand() []Event {
	if len(e.Steps) == 0 {
		return []Event{e}
	}
	out := make([]Event, 0, len(e.Steps)+1)
	for i := range e.Steps {
		out = append(out, e.Step(i))
	}
	e.Steps = nil
	return append(out, e)
}

// Step is record e's i-th step as an event (see Step and Expand).
func (e Event) Step(i int) Event {
	s := e.Steps[i]
	ev := e
	ev.ID, ev.Key, ev.Record = StepID(e.ID, i), stepKey(e.Key, s.Type), e.ID
	ev.Type, ev.Outcome, ev.Detail, ev.Note, ev.PUID = s.Type, s.Outcome, s.Detail, s.Note, s.PUID
	ev.Class, ev.Code, ev.Message, ev.Position, ev.Destination = "", "", "", Position{}, ""
	ev.Envelope, ev.Members, ev.Steps = nil, nil, nil
	return ev
}

// validSteps reports what e's steps lack, as Validate does for the event.
func (e *Event) validSteps() []error {
	if len(e.Steps) == 0 {
		return nil
	}
	var errs []error
	if len(e.Steps) > MaxSteps {
		errs = append(errs, fmt.Errorf("%d steps, more than %d", len(e.Steps), MaxSteps))
	}
	if len(e.Members) > 0 {
		errs = append(errs, fmt.Errorf("both members and steps"))
	}
	if len(e.ID) != 36 || hexDigit(e.ID[35])&3 != 0 || hexDigit(e.ID[35]) < 0 || strings.ToLower(e.ID) != e.ID {
		errs = append(errs, fmt.Errorf("id %q of a record with steps must be a lowercase UUID whose last hex digit is a multiple of 4", e.ID))
	}
	seen := map[EventType]bool{e.Type: true}
	for i, s := range e.Steps {
		switch {
		case !s.Type.Valid():
			errs = append(errs, fmt.Errorf("step %d: type %q is not a known event type", i+1, s.Type))
		case seen[s.Type]:
			errs = append(errs, fmt.Errorf("step %d: a second %s event in one record", i+1, s.Type))
		}
		seen[s.Type] = true
		if s.Outcome != Success && s.Outcome != Warning {
			errs = append(errs, fmt.Errorf("step %d: outcome %q is not suc or war", i+1, s.Outcome))
		}
	}
	return errs
}

// StepsMayMatch says whether a record's steps can be among the events f
// selects: not when f asks for what a step never has (a key of its own, a
// code, a class, a destination, members, a failure).
func (f Filter) StepsMayMatch() bool {
	return f.Key == "" && !f.Latest && f.Destination == "" && len(f.Destinations) == 0 && f.Class == "" && f.Code == "" &&
		!f.HasMembers && f.Outcome != Failure
}

// Expand appends to out the events of record e that f selects, given that
// the record matched f on every field its steps share with it (a ledger's
// query): those of its steps whose type and outcome f selects, then the
// record itself, without its steps, when its own do.
func (f Filter) Expand(out []Event, e Event) []Event {
	if f.StepsMayMatch() {
		for i, s := range e.Steps {
			if f.typeOutcome(s.Type, s.Outcome) {
				out = append(out, e.Step(i))
			}
		}
	}
	if f.typeOutcome(e.Type, e.Outcome) {
		e.Steps = nil
		out = append(out, e)
	}
	return out
}

func (f Filter) typeOutcome(t EventType, o Outcome) bool {
	if f.Outcome != "" && o != f.Outcome {
		return false
	}
	if len(f.Types) == 0 {
		return true
	}
	for _, want := range f.Types {
		if t == want {
			return true
		}
	}
	return false
}
