package premis

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults of a Verifier's checkpoints.
const (
	DefaultCheckpointEvery    = 1000
	DefaultCheckpointInterval = time.Minute
)

// Verifier checks a ledger incrementally and checkpoints its head. It
// remembers the last point it found the chain intact at (seq, count,
// hash); each Check reads that row again (it must still have its hash) and
// walks only the rows stored since, so a check costs the events appended
// since the last one, not the ledger. The first Check starts from the
// newest signed checkpoint of Log when there is one (holding the ledger to
// it as VerifyCheckpointed does), and walks the whole chain otherwise.
//
// What an incremental check does not see: a row before the point rewritten
// without recomputing the hashes after it (its own hash no longer matches
// its columns, which only a walk over it finds). Verify walks it all:
// lazaret ledger verify, run on a schedule, records its result in the log.
//
// Once a check finds a problem the Verifier stays failed: every later
// Check returns that verification. A Verifier is safe for concurrent use;
// checks run one at a time.
type Verifier struct {
	Auditor Auditor
	// Log, when set, holds the signed checkpoints.
	Log *CheckpointLog
	// Public verifies Log's entries; Key, when set, signs the entries
	// Checkpoint and Record write (Public defaults to Key's).
	Public ed25519.PublicKey
	Key    ed25519.PrivateKey
	// Every and Interval are when Checkpoint writes one: once the head
	// moved Every events past the last, or moved at all and Interval
	// passed. Zero: DefaultCheckpointEvery, DefaultCheckpointInterval.
	Every    int64
	Interval time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu        sync.Mutex
	started   bool
	point     Point
	pointWhat string
	ledger    string // the first event's hash, once known
	cps       *Checkpoints
	failed    *Verification
	recorded  bool // the failure is in the log
	signed    Point
	signedAt  time.Time
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) public() ed25519.PublicKey {
	if v.Public == nil && v.Key != nil {
		return v.Key.Public().(ed25519.PublicKey)
	}
	return v.Public
}

// Check verifies what was appended since the last check (see Verifier).
// The error is for a ledger or log that cannot be read; what is wrong is
// in the Verification.
func (v *Verifier) Check(ctx context.Context) (*Verification, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.check(ctx)
}

func (v *Verifier) check(ctx context.Context) (*Verification, error) {
	if v.failed != nil {
		return v.failed, nil
	}
	run := verifyRun{from: v.point, fromWhat: v.pointWhat}
	if !v.started {
		if v.Log != nil {
			cps, err := v.Log.Read(v.public())
			if err != nil {
				return nil, err
			}
			v.cps, run.checkpoints = cps, cps
			if lv := cps.LastVerification(); lv != nil && lv.Status == CheckpointFailed {
				f := &Verification{Events: lv.Count, Head: ChainGenesis, Problems: []Problem{{Kind: ProblemCheckpoint,
					Detail: fmt.Sprintf("the ledger failed its last verification, at %s (line %d of %s): %s (run lazaret ledger verify)",
						lv.Time.UTC().Format(time.RFC3339), lv.Line, lv.Path, lv.Problem)}}}
				v.failed, v.recorded = f, true
				return f, nil
			}
			if n := cps.Newest(); n != nil {
				run.from, run.fromWhat = Point{Seq: n.Seq, Count: n.Count, Hash: n.Hash}, "the event "+n.what()+" names"
				v.ledger, v.signed, v.signedAt = n.Ledger, run.from, n.Time
			}
		}
		run.readModel = run.from.Count == 0 // a full walk
	}
	res, err := verify(ctx, v.Auditor, run)
	if err != nil {
		return nil, err
	}
	v.started = true
	if v.ledger == "" && res.First != "" {
		v.ledger = res.First
	}
	if !res.Intact() {
		v.failed = res
		return res, nil
	}
	if res.Events > 0 {
		v.point, v.pointWhat = Point{Seq: res.Seq, Count: res.Events, Hash: res.Head}, "the event last verified"
	}
	return res, nil
}

// Checkpoint checks the ledger (Check) and, when the head moved far
// enough or long enough ago (Every, Interval) and Key is set, appends the
// verified head to Log. A failed check is recorded once (a failed entry)
// and no head is checkpointed after it. It returns the entry written, or
// nil.
func (v *Verifier) Checkpoint(ctx context.Context) (*Checkpoint, *Verification, error) {
	return v.checkpoint(ctx, false)
}

// checkpoint is Checkpoint; last signs a head that moved at all, whatever
// Every and Interval say (the head a stopping process leaves).
func (v *Verifier) checkpoint(ctx context.Context, last bool) (*Checkpoint, *Verification, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	res, err := v.check(ctx)
	if err != nil || v.Key == nil || v.Log == nil {
		return nil, res, err
	}
	if !res.Intact() {
		if v.recorded {
			return nil, res, nil
		}
		c := &Checkpoint{Ledger: v.ledger, Status: CheckpointFailed, Count: res.Events, Seq: res.Seq, Hash: res.Head, Time: v.now(), Problem: res.Problems[0].String()}
		if err := v.write(c); err != nil {
			return nil, res, err
		}
		v.recorded = true
		return c, res, nil
	}
	every, interval := v.Every, v.Interval
	if every <= 0 {
		every = DefaultCheckpointEvery
	}
	if interval <= 0 {
		interval = DefaultCheckpointInterval
	}
	p, now := v.point, v.now()
	// The first checkpoint of a log is written as soon as there is a head
	// to sign: a full verification holds a ledger with events and no
	// checkpoint not intact (VerifyCheckpointed).
	first := v.signed.Count == 0
	if p.Count == 0 || p.Count <= v.signed.Count || (!last && !first && p.Count-v.signed.Count < every && now.Sub(v.signedAt) < interval) {
		return nil, res, nil
	}
	c := &Checkpoint{Ledger: v.ledger, Status: CheckpointHead, Count: p.Count, Seq: p.Seq, Hash: p.Hash, Time: now}
	if err := v.write(c); err != nil {
		return nil, res, err
	}
	v.signed, v.signedAt = p, now
	return c, res, nil
}

func (v *Verifier) write(c *Checkpoint) error {
	c.Sign(v.Key)
	return v.Log.Append(c)
}

// Run calls Checkpoint every poll until ctx is done, then once more (so
// the head the process leaves is checkpointed), reporting each error to
// report (which may be nil).
func (v *Verifier) Run(ctx context.Context, poll time.Duration, report func(*Checkpoint, *Verification, error)) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			c, res, err := v.checkpoint(fctx, true)
			cancel()
			if report != nil {
				report(c, res, err)
			}
			return
		case <-t.C:
		}
		c, res, err := v.Checkpoint(ctx)
		if report != nil && !errors.Is(err, context.Canceled) {
			report(c, res, err)
		}
	}
}

// Full verifies the whole ledger (VerifyCheckpointed over Log, or Verify
// without one), without holding up Check meanwhile: a walk over every row
// sees what an incremental check cannot, a row before the point rewritten
// in place. A ledger that fails fails the Verifier too. With Key, the
// result is recorded in Log (Record).
func (v *Verifier) Full(ctx context.Context) (*Verification, error) {
	var cps *Checkpoints
	if v.Log != nil {
		var err error
		if cps, err = v.Log.Read(v.public()); err != nil {
			return nil, err
		}
	}
	res, err := verify(ctx, v.Auditor, verifyRun{checkpoints: cps, readModel: true})
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if !res.Intact() && v.failed == nil {
		v.failed = res
	}
	recorded := v.recorded
	v.recorded = v.recorded || !res.Intact()
	v.mu.Unlock()
	if !recorded || res.Intact() {
		if _, err := Record(v.Log, v.Key, res, v.now()); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Record appends the result of a full verification to Log, signed with
// Key: a verified entry at its head when it is intact (an empty ledger is
// not recorded), a failed one naming its first problem when not. Without
// Key or Log it writes nothing and returns nil.
func Record(log *CheckpointLog, key ed25519.PrivateKey, res *Verification, now time.Time) (*Checkpoint, error) {
	if log == nil || key == nil {
		return nil, nil
	}
	c := &Checkpoint{Ledger: res.First, Count: res.Events, Seq: res.Seq, Hash: res.Head, Time: now, Status: CheckpointVerified}
	if !res.Intact() {
		c.Status, c.Problem = CheckpointFailed, res.Problems[0].String()
	} else if res.Events == 0 {
		return nil, nil
	}
	c.Sign(key)
	return c, log.Append(c)
}

// Signed is when the newest checkpoint this verifier knows of was signed
// (read from the log, or written by it); zero when there is none.
func (v *Verifier) Signed() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.signedAt
}
