package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// The JSON the API serves and the CLI prints with --json: one shape per
// concept, snake_case keys, the same bytes from both (EncodeJSON). A
// failure is an ingest.Failure (a premis.Event); a list is, in the API,
// a page in an envelope (FailurePage) and, in the CLI, one element per line.
// openapi.json describes every response.

// FailurePage is one page of GET /v1/failures: the failures, oldest first,
// how many the page holds, how many match the filters in all, and the
// cursor of the next page (none on the last).
type FailurePage struct {
	Failures []ingest.Failure `json:"failures"`
	Count    int              `json:"count"` // on this page
	Total    int              `json:"total"` // matching the filters, on every page
	Limit    int              `json:"limit"` // the page size asked for
	// NextCursor, passed as ?cursor= with the same filters, reads the page
	// after this one; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// EncodeJSON writes v as one line of JSON, as the API and the CLI both do:
// no HTML escaping (a message with "<" stays readable).
func EncodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// FailureDetail is one failure with its item's whole history:
// GET /v1/failures/{id} and lazaret dlq|quarantine|hold show --json.
type FailureDetail struct {
	Failure ingest.Failure `json:"failure"`
	// Open: the failure is the item's latest outcome; Status says
	// otherwise what became of it.
	Open   bool   `json:"open"`
	Status string `json:"status,omitempty"`
	// Broker is where the broker holds the task, or that it lost it.
	Broker string `json:"broker"`
	// Help explains the failure's code (docs/codes.md).
	Help *CodeHelp `json:"help,omitempty"`
	// Fixity is what the item's history says of its bytes: the digest and
	// size its manifest declared, and those Lazaret computed from the bytes
	// it read (none when no fixity check of them passed: a file never read
	// has only declared values).
	Fixity  premis.Fixity  `json:"fixity"`
	History []premis.Event `json:"history"`
}

// ErrNoSuchFailure: no event, object or correlation has the id.
var ErrNoSuchFailure = errors.New("no such failure")

// FindFailure looks a failure up by its event id, its object id or its
// correlation id (the item's latest failure for either of the last two),
// and returns it with the item's history, as ingest.GetFailure does.
func FindFailure(ctx context.Context, l premis.Ledger, id string) (ingest.Failure, []premis.Event, error) {
	f, history, err := ingest.GetFailure(ctx, l, id)
	if history != nil || !errors.Is(err, premis.ErrNotFound) {
		return f, history, err
	}
	evs, qerr := l.Events(ctx, premis.Filter{CorrelationID: id})
	if qerr != nil {
		return ingest.Failure{}, nil, qerr
	}
	for i := len(evs) - 1; i >= 0; i-- {
		switch evs[i].Destination {
		case premis.DeadLetter, premis.Quarantined, premis.AuditHold:
			return ingest.GetFailure(ctx, l, evs[i].ID)
		}
	}
	return ingest.Failure{}, nil, fmt.Errorf("%w: no event, object or correlation with a failure has id %q (the ids are in the ls listings)", ErrNoSuchFailure, id)
}

// Detail builds the FailureDetail of a FindFailure answer.
func Detail(ops *ingest.Operator, f ingest.Failure, history []premis.Event, err error) FailureDetail {
	fixity := premis.FixityOf(history)
	if len(history) == 0 {
		fixity = premis.FixityOf([]premis.Event{f.Event})
	}
	for i := range history {
		history[i].Envelope = nil
	}
	d := FailureDetail{Failure: f, Open: err == nil, Fixity: fixity, History: history}
	if err != nil {
		d.Status = err.Error()
	}
	if ops != nil && ops.Broker != nil {
		d.Broker = ops.BrokerState(f)
	}
	if h, ok := LookupCode(f.Code); ok {
		d.Help = &h
	}
	return d
}

// BatchStatus is every item of a batch with its latest outcome, and the
// counts by destination: GET /v1/batches/{id} and lazaret batch status --json.
type BatchStatus struct {
	BatchID string              `json:"batch_id"`
	Items   []ingest.ItemStatus `json:"items"`
	Counts  ingest.Counts       `json:"counts"`
	// Progress: done of the items the batch was submitted with, pending,
	// retrying, rate and time left.
	Progress *ingest.Progress `json:"progress,omitempty"`
}

// NewBatchStatus counts items by destination.
func NewBatchStatus(id string, items []ingest.ItemStatus) BatchStatus {
	b := BatchStatus{BatchID: id, Items: items}
	for _, it := range items {
		b.Counts.Add(it.Destination)
	}
	return b
}

// Action is what an operator action did, or with dry_run would do:
// POST /v1/failures/{id}/replay|discard and lazaret dlq replay|discard --json.
type Action struct {
	Action    string        `json:"action"` // replay, discard, hold
	DryRun    bool          `json:"dry_run"`
	FailureID string        `json:"failure_id"`
	ObjectID  string        `json:"object_id"`
	Event     *premis.Event `json:"event"` // the event written (or that would be)
	Steps     []string      `json:"steps"` // what happens, in order
	Already   bool          `json:"already"`
	// For a replay: the fresh task.
	TaskID   string `json:"task_id,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	ReplayOf string `json:"replay_of,omitempty"`
}

// NewAction is the Action of an operator's result.
func NewAction(res *ingest.ActionResult) Action {
	a := Action{Action: res.Action, DryRun: res.DryRun, FailureID: res.Failure.ID, ObjectID: res.Failure.ObjectID,
		Event: res.Event, Steps: res.Steps, Already: res.Already}
	if res.Replay != nil {
		a.TaskID, a.Attempt, a.ReplayOf = res.TaskID, res.Replay.Attempt, res.Replay.ReplayOf
	}
	return a
}

var daysPrefix = regexp.MustCompile(`^(\d+)d`)

// ParseTime reads a point in time as the API's since/until and the CLI's
// --since/--until take it: an RFC 3339 time (2026-11-30T08:00:00Z), a date
// (2026-11-30, midnight UTC), or a duration back from now (90m, 2h, 7d,
// 1d12h).
func ParseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	d, rest := time.Duration(0), s
	if m := daysPrefix.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n > 100000 {
			return time.Time{}, fmt.Errorf("time %q: too many days", s)
		}
		d, rest = time.Duration(n)*24*time.Hour, s[len(m[0]):]
	}
	if rest != "" {
		dd, err := time.ParseDuration(rest)
		if err != nil {
			return time.Time{}, fmt.Errorf("time %q: want an RFC 3339 time (2026-11-30T08:00:00Z), a date (2026-11-30) or a duration back from now (90m, 2h, 7d)", s)
		}
		d += dd
	}
	if d < 0 {
		return time.Time{}, fmt.Errorf("time %q: a duration back from now cannot be negative", s)
	}
	return now.Add(-d), nil
}
