package premis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// GroupCommit is a Ledger whose appends from concurrent callers are written
// together: one committer takes every append waiting when it is free (up to
// MaxEvents events) and writes them in one transaction, one fsync, one
// move of the chain head. A caller returns only once its events are
// durable, with its own inserted flags; idempotency keys stay the conflict
// guard. A lone caller waits for nobody: batches form only while a commit
// is under way, which is exactly when callers would otherwise queue on the
// ledger's write lock.
//
// If a combined commit fails, each caller's events are written again on
// their own, so one bad append fails only its caller. A caller whose
// context ends while it waits gets the context's error; its events may
// still be committed (the outcome is unknown, and the caller reads the
// ledger to learn it, as after any failed commit).
type GroupCommit struct {
	Ledger
	maxEvents int

	reqs    chan *groupAppend
	looks   chan *groupLookup
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
	statsMu sync.Mutex
	stats   GroupStats
}

// GroupStats is what a GroupCommit's committer has written: its commits
// that succeeded, and the callers' appends they held (Appends/Commits is
// the mean group). A combined commit that failed and was written again one
// append at a time counts each append that then succeeded as a commit of
// one. An empty append, or one larger than a transaction, goes to the
// ledger directly and is not counted.
type GroupStats struct{ Commits, Appends int64 }

// Stats says what g has committed so far.
func (g *GroupCommit) Stats() GroupStats {
	g.statsMu.Lock()
	defer g.statsMu.Unlock()
	return g.stats
}

// committed counts a commit of appends that succeeded.
func (g *GroupCommit) committed(appends int) {
	g.statsMu.Lock()
	g.stats.Commits++
	g.stats.Appends += int64(appends)
	g.statsMu.Unlock()
}

type groupAppend struct {
	events []*Event
	firsts []FirstDelivery // AppendFirst's conditions
	ins    []bool
	err    error
	done   chan struct{}
}

// ErrStopped: the group committer was stopped.
var ErrStopped = errors.New("premis: group commit stopped")

// NewGroupCommit starts a committer over l. maxEvents bounds one
// transaction (0 means 512); an append larger than that is written alone.
func NewGroupCommit(l Ledger, maxEvents int) *GroupCommit {
	if maxEvents <= 0 {
		maxEvents = 512
	}
	g := &GroupCommit{Ledger: l, maxEvents: maxEvents, reqs: make(chan *groupAppend, 1024),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	looking := make(chan struct{})
	g.looks = make(chan *groupLookup, 1024)
	go func() {
		defer close(looking)
		g.look(l)
	}()
	go func() {
		g.run()
		<-looking
		close(g.stopped)
	}()
	return g
}

// Append implements Ledger.
func (g *GroupCommit) Append(ctx context.Context, events ...*Event) ([]bool, error) {
	return g.append(ctx, nil, events)
}

// AppendsFirst implements Ledger: whether g's ledger checks a
// FirstDelivery.
func (g *GroupCommit) AppendsFirst() bool { return g.Ledger.AppendsFirst() }

// AppendFirst implements Ledger, over a ledger that AppendsFirst:
// the appends waiting together are written in one transaction on all
// their conditions, and when one does not hold, each on its own (see
// commit), so that only its caller gets ErrNotFirst.
func (g *GroupCommit) AppendFirst(ctx context.Context, firsts []FirstDelivery, events ...*Event) ([]bool, error) {
	if !g.AppendsFirst() {
		return nil, fmt.Errorf("premis: group commit: %T does not check a first delivery: %w", g.Ledger, ErrNotImplemented)
	}
	return g.append(ctx, firsts, events)
}

// append queues events, on the conditions firsts (none for Append), for
// the committer and waits for their commit.
func (g *GroupCommit) append(ctx context.Context, firsts []FirstDelivery, events []*Event) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if len(events) == 0 || len(events) > g.maxEvents {
		return g.write(ctx, firsts, events)
	}
	// Events are prepared (and an invalid one refused) by the ledger, once:
	// a combined commit holding an invalid event fails, and each caller's
	// events are then written on their own (see commit), so it fails its
	// caller alone.
	r := &groupAppend{events: events, firsts: firsts, done: make(chan struct{})}
	select {
	case g.reqs <- r:
	case <-g.stop:
		return nil, ErrStopped
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case <-r.done:
	case <-g.stopped:
		// A request can be queued after the committer drained its queue
		// (the select above chooses at random when both are ready); none
		// will answer it now.
		if !closed(r.done) {
			return nil, ErrStopped
		}
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return r.ins, r.err
}

// write appends events to the ledger in one transaction, on the
// conditions firsts when there are any.
func (g *GroupCommit) write(ctx context.Context, firsts []FirstDelivery, events []*Event) ([]bool, error) {
	if len(firsts) == 0 {
		return g.Ledger.Append(ctx, events...)
	}
	return g.Ledger.AppendFirst(ctx, firsts, events...)
}

// closed says whether c is closed, without waiting.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (g *GroupCommit) run() {
	for {
		var first *groupAppend
		select {
		case first = <-g.reqs:
		case <-g.stop:
			g.drain()
			return
		}
		batch, n := []*groupAppend{first}, len(first.events)
	more:
		for n < g.maxEvents {
			select {
			case r := <-g.reqs:
				batch = append(batch, r)
				n += len(r.events)
			default:
				break more
			}
		}
		g.commit(batch, n)
	}
}

// drain fails what is still queued when the committer stops.
func (g *GroupCommit) drain() {
	failQueued(g.reqs, func(r *groupAppend) { r.err = ErrStopped; close(r.done) })
}

// failQueued hands fail each request still queued on reqs.
func failQueued[R any](reqs chan R, fail func(R)) {
	for {
		select {
		case r := <-reqs:
			fail(r)
		default:
			return
		}
	}
}

// commitTimeout bounds one combined commit; it belongs to no caller.
const commitTimeout = time.Minute

func (g *GroupCommit) commit(batch []*groupAppend, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	if len(batch) == 1 {
		r := batch[0]
		if r.ins, r.err = g.write(ctx, r.firsts, r.events); r.err == nil {
			g.committed(1)
		}
		close(r.done)
		return
	}
	all := make([]*Event, 0, n)
	var firsts []FirstDelivery
	for _, r := range batch {
		all = append(all, r.events...)
		firsts = append(firsts, r.firsts...)
	}
	ins, err := g.write(ctx, firsts, all)
	if err == nil && len(ins) != len(all) {
		err = fmt.Errorf("premis: group commit: %d results for %d events", len(ins), len(all))
	}
	if err != nil {
		// One caller's events, or condition, may be what failed: write
		// each on its own.
		for _, r := range batch {
			if r.ins, r.err = g.write(ctx, r.firsts, r.events); r.err == nil {
				g.committed(1)
			}
			close(r.done)
		}
		return
	}
	g.committed(len(batch))
	for _, r := range batch {
		r.ins, ins = ins[:len(r.events)], ins[len(r.events):]
		close(r.done)
	}
}

// Stop ends the committer after the commit under way; appends still
// waiting fail with ErrStopped. The ledger stays open.
func (g *GroupCommit) Stop() {
	g.once.Do(func() { close(g.stop) })
	<-g.stopped
}

// Close stops the committer and closes the ledger.
func (g *GroupCommit) Close() error {
	g.Stop()
	return g.Ledger.Close()
}

// The reads (Events, Event, CountEvents, LatestOfEach) and the audit
// (Guards, RecordedHead, Walk, WalkFrom, CheckReadModel) are the ledger's
// own, through the embedded Ledger: a GroupCommit is the whole ledger it
// wraps, so nothing behind it degrades.

// LatestOf implements Ledger: the lookups that arrive while one is under
// way are sent together once it ends (see look).
func (g *GroupCommit) LatestOf(ctx context.Context, correlationID string) (Latest, bool, error) {
	return g.latestTogether(ctx, correlationID)
}

type groupLookup struct {
	id    string
	lt    Latest
	found bool
	err   error
	done  chan struct{}
}

// maxLookups bounds the items of one combined lookup.
const maxLookups = 256

func (g *GroupCommit) latestTogether(ctx context.Context, correlationID string) (Latest, bool, error) {
	if err := ctx.Err(); err != nil {
		return Latest{}, false, context.Cause(ctx)
	}
	r := &groupLookup{id: correlationID, done: make(chan struct{})}
	select {
	case g.looks <- r:
	case <-g.stop:
		return Latest{}, false, ErrStopped
	case <-ctx.Done():
		return Latest{}, false, context.Cause(ctx)
	}
	select {
	case <-r.done:
	case <-g.stopped: // as in Append
		if !closed(r.done) {
			return Latest{}, false, ErrStopped
		}
	case <-ctx.Done():
		return Latest{}, false, context.Cause(ctx)
	}
	return r.lt, r.found, r.err
}

// look answers lookups until the committer stops: a lone one with
// LatestOf, the ones that queued meanwhile with one LatestOfEach. A
// combined lookup that fails fails each of its callers, whose deliveries
// fail as after any failed read of the ledger; nothing is decided on it.
func (g *GroupCommit) look(each Ledger) {
	for {
		var first *groupLookup
		select {
		case first = <-g.looks:
		case <-g.stop:
			failQueued(g.looks, func(r *groupLookup) { r.err = ErrStopped; close(r.done) })
			return
		}
		batch := []*groupLookup{first}
	more:
		for len(batch) < maxLookups {
			select {
			case r := <-g.looks:
				batch = append(batch, r)
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		if len(batch) == 1 {
			first.lt, first.found, first.err = each.LatestOf(ctx, first.id)
			close(first.done)
			cancel()
			continue
		}
		ids := make([]string, len(batch))
		for i, r := range batch {
			ids[i] = r.id
		}
		found, err := each.LatestOfEach(ctx, ids)
		cancel()
		for _, r := range batch {
			r.lt, r.found = found[r.id]
			r.err = err
			close(r.done)
		}
	}
}
