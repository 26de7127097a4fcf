package ingest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lazaret/lazaret/premis"
)

// Policy is the routing policy: retry budget and backoff, the poison cap,
// and the budget for failures to record or hand off a decision.
type Policy struct {
	MaxRetry  int           // retries for transient failures (not counting the first try)
	RetryBase time.Duration // ceiling of the first retry delay
	RetryMax  time.Duration // ceiling of any retry delay
	PoisonCap int           // an item failing at attempt >= PoisonCap goes to audit-hold
	// RoutingBudget is how many deliveries of one task may end without a
	// recorded decision (ledger or broker unavailable, a worker killed, a
	// task timeout) before the item is dead-lettered; RoutingBase and
	// RoutingMax shape the backoff between them.
	RoutingBudget int
	RoutingBase   time.Duration
	RoutingMax    time.Duration
	// Jitter returns a value in [0, n]; nil means uniform random (full
	// jitter). Tests set it to make delays predictable.
	Jitter func(n int64) int64
}

// DefaultPolicy: 3 retries, 2 s base, 5 min ceiling, poison cap 5; 10
// routing tries over about ten minutes.
func DefaultPolicy() Policy {
	return Policy{MaxRetry: 3, RetryBase: 2 * time.Second, RetryMax: 5 * time.Minute, PoisonCap: 5,
		RoutingBudget: 10, RoutingBase: 2 * time.Second, RoutingMax: 2 * time.Minute}
}

// BrokerRetries is the retry budget asynq is given for a task: Lazaret's
// own retries, the routing budget, and one slot in reserve. asynq archives
// a task on its own once that budget is spent, whatever the handler says;
// sized like this, Lazaret has always decided (and recorded) the item's
// fate first.
func (p Policy) BrokerRetries() int { return p.MaxRetry + p.RoutingBudget + 1 }

// Validate checks the policy's own settings.
func (p Policy) Validate() error {
	var errs []error
	if p.MaxRetry < 0 || p.MaxRetry > 100 {
		errs = append(errs, fmt.Errorf("max retry %d: want 0..100", p.MaxRetry))
	}
	if p.RetryBase <= 0 {
		errs = append(errs, fmt.Errorf("retry base %s: want > 0", p.RetryBase))
	}
	if p.RetryMax < p.RetryBase {
		errs = append(errs, fmt.Errorf("retry max %s is below the base %s", p.RetryMax, p.RetryBase))
	}
	if p.PoisonCap < 2 {
		errs = append(errs, fmt.Errorf("poison cap %d: want 2 or more", p.PoisonCap))
	}
	if p.RoutingBudget < 1 || p.RoutingBudget > 100 {
		errs = append(errs, fmt.Errorf("routing budget %d: want 1..100", p.RoutingBudget))
	}
	if p.RoutingBase <= 0 || p.RoutingMax < p.RoutingBase {
		errs = append(errs, fmt.Errorf("routing backoff %s..%s: want 0 < base <= max", p.RoutingBase, p.RoutingMax))
	}
	return errors.Join(errs...)
}

// Decision is the fate of one item (or one message) at one attempt: what
// Decide returns, what the ledger records, what asynq is told.
type Decision struct {
	Class       premis.Class       `json:"class,omitempty"`
	Code        string             `json:"code,omitempty"`
	Destination premis.Destination `json:"destination"`
	// Delay before the retry, when Destination is Retry.
	Delay time.Duration `json:"-"`
	// Note says why, in words: retry n of m, retries exhausted, poison cap.
	Note string `json:"note,omitempty"`
}

// Decide is the routing rule, and the only one: err (nil for a pass) at
// Lazaret's attempt number attempt (replay hops plus retries, 1-based),
// after retries retries Lazaret already decided for this task. It does no
// I/O; only the jitter of a retry delay is random.
func (p Policy) Decide(err error, attempt, retries int) Decision {
	class, code := classify(err)
	d := Decision{Class: class, Code: code, Destination: p.route(class, attempt, retries)}
	switch d.Destination {
	case premis.Retry:
		delay, ceiling := p.Backoff(retries)
		d.Delay = delay
		d.Note = fmt.Sprintf("retry %d of %d in %s (backoff ceiling %s): %v", retries+1, p.MaxRetry, delay.Round(time.Millisecond), ceiling, err)
	case premis.DeadLetter:
		if class == premis.Transient {
			d.Note = fmt.Sprintf("retries exhausted after %d retries: %v", retries, err)
		}
	case premis.AuditHold:
		d.Note = fmt.Sprintf("poison cap reached at attempt %d (cap %d): %v", attempt, p.PoisonCap, err)
	}
	return d
}

// route is the destination table behind Decide.
func (p Policy) route(c premis.Class, attempt, retries int) premis.Destination {
	switch {
	case c == "":
		return premis.Accepted
	case attempt >= p.PoisonCap:
		return premis.AuditHold
	}
	switch c {
	case premis.Transient:
		if retries >= p.MaxRetry {
			return premis.DeadLetter
		}
		return premis.Retry
	case premis.Structural:
		return premis.DeadLetter
	}
	return premis.Quarantined // semantic, regulatory, unknown
}

// QueueFor is the queue where the broker holds an item routed to d, or ""
// for a destination the broker does not hold (accepted, discarded).
func QueueFor(d premis.Destination) string {
	switch d {
	case premis.Quarantined:
		return QueueQuarantine
	case premis.AuditHold:
		return QueueAuditHold
	case premis.DeadLetter, premis.Retry, premis.Submitted, premis.Replayed:
		return QueueIngest
	}
	return ""
}

// RoutingBackoff is the delay before routing try number try+1: exponential
// from RoutingBase, capped at RoutingMax, with equal jitter (half fixed,
// half random), so that the whole budget spans a predictable time.
func (p Policy) RoutingBackoff(try int) time.Duration {
	ceiling := exponential(p.RoutingBase, p.RoutingMax, try)
	return ceiling/2 + time.Duration(p.jitter(int64(ceiling/2)))
}

// exponential is base * 2^n, capped at max (and safe from overflow).
func exponential(base, max time.Duration, n int) time.Duration {
	if n < 62 {
		if c := base << n; c > 0 && c < max {
			return c
		}
	}
	return max
}

// jitter returns a value in [0, n]: the policy's, or uniform random.
func (p Policy) jitter(n int64) int64 {
	if p.Jitter != nil {
		return p.Jitter(n)
	}
	return rand.Int64N(n + 1)
}

// Backoff returns the delay before retry number retried+1 and its ceiling:
// exponential (base * 2^retried, capped at RetryMax) with full jitter
// (uniform in [0, ceiling]).
func (p Policy) Backoff(retried int) (delay, ceiling time.Duration) {
	ceiling = exponential(p.RetryBase, p.RetryMax, retried)
	return time.Duration(p.jitter(int64(ceiling))), ceiling
}
