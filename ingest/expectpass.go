package ingest

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ExpectationPass is the workers' periodic reconciliation by what the
// ledger expects: every item whose latest event expects broker work must
// have a task that will run (see reconcileItem); what does not is put
// back under its own task id. It is incremental (each Tick checks one page
// of items after a cursor kept in Redis, and on reaching the end the
// parked copies, then starts over) and leader-elected (one worker of the
// fleet runs it at a time, under a lease in Redis; the repairs are
// idempotent all the same). It finishes what an operator's action or a
// submitter recorded and did not hand to the broker (a replay killed
// between its event and its enqueue), re-enqueues what an evicting Redis
// or a ledger gone back in time stranded, and archives again a dead letter
// Redis lost. reconcile-broker remains the full pass on demand.
type ExpectationPass struct {
	Op    *Operator
	Redis redis.UniversalClient
	// Name is this worker's, as the lease records it.
	Name string
	// Every is how often Tick is called; the lease lasts three times that.
	Every time.Duration
	// Page is how many items one Tick checks (reconcilePage when 0).
	Page int
	// Settle: items whose latest event is younger are left to the next
	// round (a submitter between its event and its enqueue); one minute
	// when 0.
	Settle time.Duration
}

// Keys of the expectation pass in Redis.
const (
	expectLeaderKey = "lazaret:expect:leader"
	expectCursorKey = "lazaret:expect:cursor"
)

// leadScript takes or extends the lease: it is this worker's if nobody
// holds it or it already does.
var leadScript = redis.NewScript(`
local cur = redis.call("GET", KEYS[1])
if cur == false or cur == ARGV[1] then
	redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
	return 1
end
return 0
`)

// Tick runs one step of the pass if this worker leads: ran says whether
// it did; rep is what it found and repaired (counted by Op.Repaired).
func (p *ExpectationPass) Tick(ctx context.Context) (rep *ReconcileReport, ran bool, err error) {
	if p.Redis == nil {
		return nil, false, fmt.Errorf("expectation pass: no Redis client")
	}
	lease := 3 * p.Every
	if lease <= 0 {
		lease = 3 * time.Minute
	}
	won, err := leadScript.Run(ctx, p.Redis, []string{expectLeaderKey}, p.Name, lease.Milliseconds()).Int()
	if err != nil {
		return nil, false, fmt.Errorf("expectation pass: lease: %w", err)
	}
	if won != 1 {
		return nil, false, nil
	}
	o := p.Op
	rep = newReconcileReport(false)
	if o.PublishQueues != nil {
		if err := o.PublishQueues(ctx); err != nil {
			return rep, true, err
		}
	}
	if err := o.reconcileArchived(ctx, rep, true); err != nil {
		return rep, true, err
	}
	cursor := int64(0)
	if v, err := p.Redis.Get(ctx, expectCursorKey).Result(); err == nil {
		cursor, _ = strconv.ParseInt(v, 10, 64)
	} else if err != redis.Nil {
		return rep, true, fmt.Errorf("expectation pass: cursor: %w", err)
	}
	page, settle := p.Page, p.Settle
	if page <= 0 {
		page = reconcilePage
	}
	if settle <= 0 {
		settle = time.Minute
	}
	through, end, err := o.reconcileItems(ctx, rep, cursor, page, settle)
	if err != nil {
		o.logReport(ctx, rep)
		return rep, true, err
	}
	if end {
		// A round is complete: the parked copies are checked, and the
		// next round starts from the beginning.
		if err := o.reconcileParked(ctx, rep); err != nil {
			o.logReport(ctx, rep)
			return rep, true, err
		}
		through = 0
	}
	if err := p.Redis.Set(ctx, expectCursorKey, strconv.FormatInt(through, 10), 0).Err(); err != nil {
		return rep, true, fmt.Errorf("expectation pass: cursor: %w", err)
	}
	o.logReport(ctx, rep)
	return rep, true, nil
}
