package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// taskHold is what the broker holds of a task the ledger expects of it.
type taskHold int

const (
	// holdLive: the task will run (or is running): it is where its
	// record's state says, in a queue a worker reads (pending, scheduled,
	// retry), or active under a lease that is not stale.
	holdLive taskHold = iota
	// holdArchived: the task is in the archived set (the DLQ).
	holdArchived
	// holdNone: nothing that will run. No record; or a record that is
	// completed (its outcome was acted on, and the ledger does not have
	// it: a restored backup, a lagging replica promoted); or a record whose
	// list or set entry is gone (an evicting Redis, maxmemory-policy
	// allkeys-*); or active under a lease expired long ago.
	holdNone
)

// staleLease is how long after its lease expired an active task is taken
// for lost. asynq's recoverer moves such a task to retry within a minute
// while a server runs; one left active longer has nobody to recover it.
const staleLease = 5 * time.Minute

// taskCheckScript reads, in one step, a task's record and whether it is in
// the list or set its state names; with ARGV[4] = "1" it removes what is
// left of a task that is not live (the record, and its id from every list
// and set of the queue), so that it can be enqueued again under its id.
// Duplicates of the id in the pending list (an evicted record parked again
// pushes the id a second time) are cut to one.
//
// KEYS: task, pending, active, scheduled, retry, archived, lease, completed.
// ARGV: id, now (unix seconds), stale (seconds), clear.
// Returns {hold, state, duplicates removed}.
var taskCheckScript = redis.NewScript(`
local id = ARGV[1]
local state = redis.call("HGET", KEYS[1], "state")
if not state then state = "" end
local hold = "none"
if state == "pending" then
	local n = #redis.call("LPOS", KEYS[2], id, "COUNT", 0)
	if n > 0 then hold = "live" end
	if n > 1 then
		redis.call("LREM", KEYS[2], 0, id)
		redis.call("RPUSH", KEYS[2], id)
		return {hold, state, n - 1}
	end
elseif state == "scheduled" then
	if redis.call("ZSCORE", KEYS[4], id) then hold = "live" end
elseif state == "retry" then
	if redis.call("ZSCORE", KEYS[5], id) then hold = "live" end
elseif state == "active" then
	local lease = redis.call("ZSCORE", KEYS[7], id)
	if redis.call("LPOS", KEYS[3], id) and lease and tonumber(lease) + tonumber(ARGV[3]) >= tonumber(ARGV[2]) then hold = "live" end
elseif state == "archived" then
	if redis.call("ZSCORE", KEYS[6], id) then hold = "archived" end
end
if hold == "none" and ARGV[4] == "1" then
	redis.call("LREM", KEYS[2], 0, id)
	redis.call("LREM", KEYS[3], 0, id)
	redis.call("ZREM", KEYS[4], id)
	redis.call("ZREM", KEYS[5], id)
	redis.call("ZREM", KEYS[6], id)
	redis.call("ZREM", KEYS[7], id)
	redis.call("ZREM", KEYS[8], id)
	redis.call("DEL", KEYS[1])
end
return {hold, state, 0}
`)

// checkTask says what the broker holds of task id in queue (see taskHold)
// and the state its record names ("" when there is none). With clear, a
// task that is not held (holdNone) is removed entirely, so that the caller
// can enqueue it again under the same id. dupes is how many extra copies
// of the id were cut from the pending list.
//
// Without a Redis client (o.Redis nil) it falls back on asynq's inspector,
// which reads only the record: a completed task is still told apart, but
// not a record whose list entry was evicted.
func (o *Operator) checkTask(ctx context.Context, queue, id string, clear bool) (hold taskHold, state string, dupes int, err error) {
	if o.Redis == nil {
		ti, err := o.Broker.GetTaskInfo(queue, id)
		if brokerLost(err) {
			return holdNone, "", 0, nil
		}
		if err != nil {
			return holdNone, "", 0, err
		}
		switch ti.State {
		case asynq.TaskStatePending, asynq.TaskStateScheduled, asynq.TaskStateRetry, asynq.TaskStateAggregating:
			return holdLive, ti.State.String(), 0, nil
		case asynq.TaskStateActive:
			if !ti.IsOrphaned {
				return holdLive, "active", 0, nil
			}
		case asynq.TaskStateArchived:
			return holdArchived, "archived", 0, nil
		}
		if clear {
			if err := o.Broker.DeleteTask(queue, id); err != nil && !brokerLost(err) {
				return holdNone, ti.State.String(), 0, err
			}
		}
		return holdNone, ti.State.String(), 0, nil
	}
	p := "asynq:{" + queue + "}:"
	clearArg := "0"
	if clear {
		clearArg = "1"
	}
	res, err := taskCheckScript.Run(ctx, o.Redis, []string{p + "t:" + id, p + "pending", p + "active", p + "scheduled", p + "retry", p + "archived", p + "lease", p + "completed"},
		id, time.Now().Unix(), int64(staleLease/time.Second), clearArg).Slice()
	if err != nil {
		return holdNone, "", 0, fmt.Errorf("check task %s in %s: %w", id, queue, err)
	}
	if len(res) != 3 {
		return holdNone, "", 0, fmt.Errorf("check task %s in %s: unexpected reply %v", id, queue, res)
	}
	h, _ := res[0].(string)
	state, _ = res[1].(string)
	n, _ := res[2].(int64)
	switch h {
	case "live":
		hold = holdLive
	case "archived":
		hold = holdArchived
	default:
		hold = holdNone
	}
	return hold, state, int(n), nil
}

// lostWhat names what a task not held was, for the report: "missing" (no
// record), or the state of the record left behind.
func lostWhat(state string) string {
	if state == "" {
		return "missing"
	}
	return state
}
