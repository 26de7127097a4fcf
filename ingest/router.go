package ingest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lazaret/lazaret/premis"
)

// Policy is the routing policy: retry budget and backoff, and the poison cap.
type Policy struct {
	MaxRetry  int           // retries for transient failures (not counting the first try)
	RetryBase time.Duration // ceiling of the first retry delay
	RetryMax  time.Duration // ceiling of any retry delay
	PoisonCap int           // an item failing at attempt >= PoisonCap goes to audit-hold
	// Jitter returns a value in [0, n]; nil means uniform random (full
	// jitter). Tests set it to make delays predictable.
	Jitter func(n int64) int64
}

// DefaultPolicy: 3 retries, 2 s base, 5 min ceiling, poison cap 5.
func DefaultPolicy() Policy {
	return Policy{MaxRetry: 3, RetryBase: 2 * time.Second, RetryMax: 5 * time.Minute, PoisonCap: 5}
}

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
	return errors.Join(errs...)
}

// Route decides where a failure of class c goes. attempt is the item's
// attempt number (replay hops plus retries, 1-based); retried and maxRetry are
// the broker's retry count and budget for this task.
func (p Policy) Route(c premis.Class, attempt, retried, maxRetry int) premis.Destination {
	switch {
	case c == "":
		return premis.Accepted
	case attempt >= p.PoisonCap:
		return premis.AuditHold
	}
	switch c {
	case premis.Transient:
		if retried >= maxRetry {
			return premis.DeadLetter
		}
		return premis.Retry
	case premis.Structural:
		return premis.DeadLetter
	}
	return premis.Quarantined // semantic, regulatory, unknown
}

// Backoff returns the delay before retry number retried+1 and its ceiling:
// exponential (base * 2^retried, capped at RetryMax) with full jitter
// (uniform in [0, ceiling]).
func (p Policy) Backoff(retried int) (delay, ceiling time.Duration) {
	ceiling = p.RetryMax
	if retried < 62 {
		if c := p.RetryBase << retried; c > 0 && c < p.RetryMax {
			ceiling = c
		}
	}
	jitter := p.Jitter
	if jitter == nil {
		jitter = func(n int64) int64 { return rand.Int64N(n + 1) }
	}
	return time.Duration(jitter(int64(ceiling))), ceiling
}
