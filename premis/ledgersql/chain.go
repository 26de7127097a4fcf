package ledgersql

import (
	"fmt"

	"github.com/lazaret/lazaret/premis"
)

// Chain chains an append's new events onto the ledger's head, one after
// another, as a backend stores them inside the transaction that holds the
// head: Row gives an event's insert arguments with its place in the chain,
// Link moves the head once the event is stored, and Done hands the events
// their chain fields once the transaction has committed. A backend decides
// only how it finds what is stored already and how it sends the rows.
type Chain struct {
	// Head is the head as the events chained so far leave it.
	Head     premis.Head
	start    int64
	events   []*premis.Event
	inserted []bool
	links    []premis.Event // the chain fields of those inserted
}

// NewChain begins chaining events onto head, the head record as the
// append's transaction read it.
func NewChain(head premis.Head, events []*premis.Event) *Chain {
	return &Chain{Head: head, start: head.Count, events: events,
		inserted: make([]bool, len(events)), links: make([]premis.Event, len(events))}
}

// Row appends to args the insert's values for events[i] chained onto the
// head — the NumColumns of Columns, then prev_hash and hash, as the ledger
// d speaks to stores them — and returns them with its hash.
func (c *Chain) Row(args []any, i int, d Dialect) ([]any, string, error) {
	e := c.events[i]
	hash := premis.ChainHash(c.Head.Hash, e)
	members, err := EncodeMembers(e.Members)
	if err != nil {
		return args, "", fmt.Errorf("append %s: %w", e.Type, err)
	}
	encode := EncodeSteps
	if d.Packed {
		encode = EncodeStepsPacked
	}
	steps, err := encode(e)
	if err != nil {
		return args, "", fmt.Errorf("append %s: %w", e.Type, err)
	}
	env, err := EncodeEnvelope(e)
	if err != nil {
		return args, "", fmt.Errorf("append %s: %w", e.Type, err)
	}
	if !d.Packed {
		return append(args, e.ID, e.Key, string(e.Type), d.Time(e.DateTime), e.Detail, string(e.Outcome), e.Note, string(e.Class), e.Code,
			e.Message, e.Offset, e.Page, e.Segment, e.Element, e.Component, e.Tag, string(e.Destination), e.ObjectID, e.BatchID,
			e.CorrelationID, e.Kind, e.SHA256, e.Size, e.PUID, e.Path, e.Attempt, e.Retries, e.TaskID, e.ReplayOf, e.Agent, e.Operator, env,
			members, steps, c.Head.Hash, hash), hash, nil
	}
	if err := CheckPackedTime(e.DateTime); err != nil {
		return args, "", fmt.Errorf("append %s: %w", e.Type, err)
	}
	detail, err := EncodeDetail(e)
	if err != nil {
		return args, "", fmt.Errorf("append %s: %w", e.Type, err)
	}
	return append(args, Pack(e.ID), Pack(e.Key), string(e.Type), PackTime(e.DateTime), detail, string(e.Outcome), e.Note, string(e.Class), e.Code,
		e.Message, e.Offset, e.Page, e.Segment, e.Element, e.Component, e.Tag, string(e.Destination), e.ObjectID, e.BatchID,
		Pack(e.CorrelationID), e.Kind, Pack(e.SHA256), e.Size, e.PUID, e.Path, e.Attempt, e.Retries, e.TaskID, e.ReplayOf, e.Agent, e.Operator, env,
		members, steps, PackPrev(c.Head.Hash), Pack(hash)), hash, nil
}

// Link records events[i], stored as its Row said with hash, as the next
// link: the head moves onto it. seq is its row's, when known yet (SetSeq
// gives it later otherwise).
func (c *Chain) Link(i int, seq int64, hash string) {
	c.inserted[i] = true
	c.links[i] = premis.Event{Seq: seq, PrevHash: c.Head.Hash, Hash: hash}
	c.Head = premis.Head{Count: c.Head.Count + 1, Hash: hash}
}

// SetSeq gives events[i], linked already, the seq its row was stored at.
func (c *Chain) SetSeq(i int, seq int64) { c.links[i].Seq = seq }

// Moved: some event was linked, so the head record must move to Head.
func (c *Chain) Moved() bool { return c.Head.Count > c.start }

// Done gives each linked event its seq and chain fields, once the
// transaction has committed, and says which events were inserted (the
// others are stored already, and read back by the backend).
func (c *Chain) Done() []bool {
	for i, e := range c.events {
		if c.inserted[i] {
			e.Seq, e.PrevHash, e.Hash = c.links[i].Seq, c.links[i].PrevHash, c.links[i].Hash
		}
	}
	return c.inserted
}
