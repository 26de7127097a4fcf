package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// The kinds of events that are not about an item of a registered kind
// (validate.Kinds).
const (
	// KindBatch is the kind of a batch's own events: what was submitted,
	// and how many items to expect.
	KindBatch = "batch"
	// KindTask is the kind of a delivery whose payload never decoded into
	// an item (or whose item is unknown): the broker's task.
	KindTask = "task"
)

// ItemKinds are the kinds a failure or an outcome can be of: the
// registered item kinds, and KindTask.
func ItemKinds() []string { return append(validate.KindNames(), KindTask) }

// batchFact is the envelope of a batch's submission event.
type batchFact struct {
	BatchID   string `json:"batch_id"`
	Submitter string `json:"submitter,omitempty"`
	Items     int    `json:"items"`
}

// batchEvent records that a manifest of len(m.Items) items was submitted as
// batch m.BatchID. It is keyed by the manifest's items, so submitting the
// same manifest again finds it, and a corrected manifest records a new one.
func batchEvent(m *validate.Manifest, sw premis.Software, at time.Time) *premis.Event {
	h := sha256.New()
	for _, it := range m.Items {
		b, _ := json.Marshal(it)
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	digest := hex.EncodeToString(h.Sum(nil))
	fact, _ := json.Marshal(batchFact{BatchID: m.BatchID, Submitter: m.Submitter, Items: len(m.Items)})
	batch := &Envelope{ObjectID: m.BatchID, BatchID: m.BatchID, CorrelationID: "batch/" + m.BatchID, Kind: KindBatch, SHA256: digest}
	ev := newEvent(batch, premis.IngestionStart, 0, "", sw) // a batch has no attempts
	ev.Key = premis.EventKey(batch.CorrelationID, digest, premis.IngestionStart, 1)
	ev.DateTime, ev.Outcome, ev.Operator = at, premis.Success, m.Submitter
	ev.Detail = fmt.Sprintf("batch %s submitted: %d items expected", m.BatchID, len(m.Items))
	ev.Envelope = fact
	return ev
}

// Progress is how far a batch has come, from the ledger: its items (the
// manifest's; an interchange's messages are counted apart), where each
// stands, how fast they settle and how long the rest should take.
type Progress struct {
	BatchID string `json:"batch_id"`
	// Expected is the number of items the batch was submitted with (0 when
	// its submission predates batch facts).
	Expected int `json:"expected"`
	// Recorded items have at least one event with a destination.
	Recorded int `json:"recorded"`
	// Done items have a final or parked outcome (accepted, dead-letter,
	// quarantined, audit-hold, discarded); Failed is the part of them that
	// is neither accepted nor discarded.
	Done    int `json:"done"`
	Failed  int `json:"failed"`
	Pending int `json:"pending"` // submitted (or replayed), not yet settled
	Retry   int `json:"retrying"`
	// ByDestination counts items by their latest destination.
	ByDestination Counts `json:"by_destination"`
	// Messages counts the messages of the batch's interchanges by their
	// latest destination, as BatchStatus lists them.
	Messages Counts `json:"messages"`
	// ParkedMessages are the messages in quarantine or on audit-hold, and
	// WithParked the accepted interchanges they belong to: an interchange
	// is accepted for its envelope, and its parked messages still wait for
	// a reconcile or a person.
	ParkedMessages int       `json:"parked_messages"`
	WithParked     int       `json:"accepted_with_parked_messages"`
	SubmittedAt    time.Time `json:"submitted_at"`
	LastAt         time.Time `json:"last_at"`
	// ItemsPerSecond is Done over the time from submission to the last
	// settled item; ETA is what the rest takes at that rate (0 when done or
	// unknown).
	ItemsPerSecond float64       `json:"items_per_second"`
	ETA            time.Duration `json:"-"`
	ETASeconds     float64       `json:"eta_seconds"`
}

// Counts are items (or messages) by the destination of their latest
// outcome, every one present (0 included), under names a JSON path can
// spell (.counts.dead_letter): the destinations' own values
// (premis.DeadLetter, "dead-letter") are values, not keys.
type Counts struct {
	Accepted   int `json:"accepted"`
	Retrying   int `json:"retrying"`
	DeadLetter int `json:"dead_letter"`
	Quarantine int `json:"quarantine"`
	AuditHold  int `json:"audit_hold"`
	Replayed   int `json:"replayed"`
	Discarded  int `json:"discarded"`
	Submitted  int `json:"submitted"` // recorded, not yet processed
}

// Add counts one whose latest outcome went to d.
func (c *Counts) Add(d premis.Destination) {
	if n := c.of(d); n != nil {
		*n++
	}
}

// Of is the count of destination d.
func (c *Counts) Of(d premis.Destination) int {
	if n := c.of(d); n != nil {
		return *n
	}
	return 0
}

// of is the count of destination d, nil for a destination not counted.
func (c *Counts) of(d premis.Destination) *int {
	switch d {
	case premis.Accepted:
		return &c.Accepted
	case premis.Retry:
		return &c.Retrying
	case premis.DeadLetter:
		return &c.DeadLetter
	case premis.Quarantined:
		return &c.Quarantine
	case premis.AuditHold:
		return &c.AuditHold
	case premis.Replayed:
		return &c.Replayed
	case premis.Discarded:
		return &c.Discarded
	case premis.Submitted, "":
		return &c.Submitted
	}
	return nil
}

// Total is the sum of every count.
func (c *Counts) Total() int {
	return c.Accepted + c.Retrying + c.DeadLetter + c.Quarantine + c.AuditHold + c.Replayed + c.Discarded + c.Submitted
}

// Total is the number of items the batch holds: those expected, or those
// recorded when more are (or nothing was recorded about the batch itself).
func (p *Progress) Total() int { return max(p.Expected, p.Recorded) }

// Summary is the batch's progress in one line, as submit --wait, batch
// status and the batch page print it: "12/30 done (11 accepted, 1
// quarantined), 18 pending, 0 retrying, 4.1 items/s, about 4s left".
func (p *Progress) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d done (%s), %d pending, %d retrying", p.Done, p.Total(), p.Tally(), p.Pending, p.Retry)
	if p.ItemsPerSecond > 0 {
		fmt.Fprintf(&b, ", %.1f items/s", p.ItemsPerSecond)
	}
	if p.ETA > 0 {
		fmt.Fprintf(&b, ", about %s left", p.ETA.Round(time.Second))
	}
	return b.String()
}

// Tally names the settled items by destination, accepted first, and the
// messages of the batch's interchanges.
func (p *Progress) Tally() string {
	order := []struct {
		d    premis.Destination
		name string
	}{{premis.Accepted, "accepted"}, {premis.DeadLetter, "dead-lettered"}, {premis.Quarantined, "quarantined"},
		{premis.AuditHold, "on audit-hold"}, {premis.Discarded, "discarded"}}
	var parts []string
	for _, o := range order {
		if n := p.ByDestination.Of(o.d); n > 0 {
			part := fmt.Sprintf("%d %s", n, o.name)
			if o.d == premis.Accepted && p.WithParked > 0 {
				part += fmt.Sprintf(" (%d with parked messages)", p.WithParked)
			}
			parts = append(parts, part)
		}
	}
	if n := p.Messages.Total(); n > 0 {
		msgs := []string{fmt.Sprintf("%d/%d accepted", p.Messages.Accepted, n)}
		for _, o := range order[1:] {
			if c := p.Messages.Of(o.d); c > 0 {
				msgs = append(msgs, fmt.Sprintf("%d %s", c, o.name))
			}
		}
		parts = append(parts, "messages "+strings.Join(msgs, ", "))
	}
	if len(parts) == 0 {
		return "none settled yet"
	}
	return strings.Join(parts, ", ")
}

// Finished says whether every item of the batch has an outcome.
func (p *Progress) Finished() bool { return p.Total() > 0 && p.Done >= p.Total() }

// BatchProgress reads how far batch batchID has come. ErrUnknownBatch
// when the ledger knows nothing of it.
func BatchProgress(ctx context.Context, l premis.Ledger, batchID string) (*Progress, error) {
	_, p, err := BatchReport(ctx, l, batchID)
	return p, err
}

// BatchReport reads a batch once: every item's latest outcome (BatchStatus)
// and the progress they make. ErrUnknownBatch when the ledger knows nothing
// of it.
func BatchReport(ctx context.Context, l premis.Ledger, batchID string) ([]ItemStatus, *Progress, error) {
	items, err := BatchStatus(ctx, l, batchID)
	if err != nil {
		return nil, nil, err
	}
	facts, err := l.Events(ctx, premis.Filter{BatchID: batchID, Kind: KindBatch})
	if err != nil {
		return nil, nil, err
	}
	if len(items) == 0 && len(facts) == 0 {
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownBatch, batchID)
	}
	p := &Progress{BatchID: batchID}
	if len(facts) > 0 {
		sort.Slice(facts, func(i, j int) bool { return facts[i].Seq < facts[j].Seq })
		last := facts[len(facts)-1]
		var f batchFact
		if err := json.Unmarshal(last.Envelope, &f); err == nil {
			p.Expected = f.Items
		}
		p.SubmittedAt = facts[0].DateTime
	}
	parkedIn := map[string]bool{} // interchanges with a parked message
	for _, it := range items {
		if it.Kind == KindBatch {
			continue
		}
		if parent, _, ok := strings.Cut(it.ObjectID, "#"); ok {
			p.Messages.Add(it.Destination)
			if it.Destination.Parked() {
				p.ParkedMessages++
				parkedIn[parent] = true
			}
			continue
		}
		p.Recorded++
		p.ByDestination.Add(it.Destination)
		switch it.Destination {
		case premis.Submitted, premis.Replayed:
			// Replayed: a new attempt is on its way.
			p.Pending++
			if p.SubmittedAt.IsZero() || it.At.Before(p.SubmittedAt) {
				p.SubmittedAt = it.At
			}
			continue
		case premis.Retry:
			p.Retry++
			continue
		case premis.DeadLetter, premis.Quarantined, premis.AuditHold:
			p.Failed++
		}
		p.Done++
		if it.At.After(p.LastAt) {
			p.LastAt = it.At
		}
	}
	for _, it := range items {
		if it.Destination == premis.Accepted && parkedIn[it.ObjectID] {
			p.WithParked++
		}
	}
	p.Pending += max(0, p.Expected-p.Recorded) // not recorded yet at all
	if p.Done > 0 && !p.SubmittedAt.IsZero() && p.LastAt.After(p.SubmittedAt) {
		p.ItemsPerSecond = float64(p.Done) / p.LastAt.Sub(p.SubmittedAt).Seconds()
		if rest := p.Total() - p.Done; rest > 0 {
			p.ETA = time.Duration(float64(rest) / p.ItemsPerSecond * float64(time.Second))
			p.ETASeconds = p.ETA.Seconds()
		}
	}
	return items, p, nil
}

// acceptedChunks are the ing events of a batch that accept messages of its
// interchanges as their members, a chunk each.
func acceptedChunks(ctx context.Context, l premis.Ledger, batchID string) ([]premis.Event, error) {
	return l.Events(ctx, premis.Filter{BatchID: batchID, HasMembers: true, Types: []premis.EventType{premis.Ingestion}})
}

// ErrUnknownBatch: the ledger holds nothing of the batch (a mistyped id,
// or a batch submitted to another ledger).
var ErrUnknownBatch = errors.New("no such batch in the ledger")

// Outcome is where an item (a master, an interchange or one of its
// messages) is now, and the event that says so.
type Outcome struct {
	Destination premis.Destination `json:"destination"`
	Event       premis.Event       `json:"event"`
	// Member is the message's entry in Event when the message was accepted
	// with the others of its chunk (premis.Member), whose ing event holds
	// it; nil when Event is the item's own.
	Member *premis.Member `json:"member,omitempty"`
}

// ItemOutcome reads from the ledger where the item objectID of batch
// batchID, submitted with digest sha, is: the latest of its own events
// with a terminal destination, or for a message of an interchange without
// one, the ing event of the interchange that holds it among its members.
// ok is false while the item is not settled.
func ItemOutcome(ctx context.Context, l premis.Ledger, batchID, objectID, sha string) (out Outcome, ok bool, err error) {
	evs, err := l.Events(ctx, premis.Filter{CorrelationID: CorrelationID(batchID, objectID, sha)})
	if err != nil {
		return out, false, err
	}
	for _, e := range evs {
		if e.Destination.Terminal() {
			out, ok = Outcome{Destination: e.Destination, Event: e}, true
		}
	}
	parent, _, message := strings.Cut(objectID, "#")
	if ok || !message {
		return out, ok, nil
	}
	chunks, err := l.Events(ctx, premis.Filter{CorrelationID: CorrelationID(batchID, parent, sha), ObjectID: objectID, HasMembers: true,
		Types: []premis.EventType{premis.Ingestion}})
	if err != nil {
		return out, false, err
	}
	for _, e := range chunks {
		for _, m := range e.Members {
			if m.ObjectID == objectID {
				out, ok = Outcome{Destination: premis.Accepted, Event: e, Member: &m}, true
			}
		}
	}
	return out, ok, nil
}
