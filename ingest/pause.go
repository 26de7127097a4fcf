package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lazaret/lazaret/premis"
)

// LedgerPausedError is what asynq is told of a delivery handed back
// because the ledger cannot be written: not a failure (Config.IsFailure
// says so, so asynq does not count it against the task's retries, and
// Lazaret's routing budget, which counts asynq's retries, is not spent),
// retried after Delay.
type LedgerPausedError struct {
	Delay time.Duration
	Err   error
}

func (e *LedgerPausedError) Error() string {
	return fmt.Sprintf("ledger unwritable, intake paused; the task waits in the broker: %v", e.Err)
}
func (e *LedgerPausedError) Unwrap() error { return e.Err }

// isFailure is asynq's Config.IsFailure: every error counts against the
// task's retries but a pause for the ledger.
func isFailure(err error) bool {
	var p *LedgerPausedError
	return !errors.As(err, &p)
}

// ledgerPause is how long this worker takes no item after the ledger
// refused a write, before one delivery tries it again: the routing
// backoff's first steps, so a short blip costs little and a long outage
// costs one try per pause.
func (p Policy) ledgerPause() time.Duration {
	return min(p.RoutingMax, 4*p.RoutingBase)
}

// pauseCause is the error that paused intake.
type pauseCause struct{ err error }

// intakePaused says, with the error that paused it, whether this worker
// takes no item now: the ledger refused a write less than a pause ago.
func (w *Worker) intakePaused() error {
	until := w.pausedUntil.Load()
	if until == 0 || time.Now().UnixNano() >= until {
		return nil
	}
	if c := w.pauseCause.Load(); c != nil {
		return c.err
	}
	return premis.ErrBusy
}

// pauseIntake ends a delivery that found the ledger unwritable: nothing is
// recorded, intake pauses for a while (every delivery in that time is
// handed back at once, without validation), and the task is retried after
// the pause, with jitter, without spending its budgets.
func (w *Worker) pauseIntake(ctx context.Context, d *delivery, err error) error {
	pause := w.Policy.ledgerPause()
	now := time.Now()
	if w.pausedUntil.Load() < now.UnixNano() {
		w.pausedUntil.Store(now.Add(pause).UnixNano())
		w.pauseCause.Store(&pauseCause{err})
		attrs := []slog.Attr{slog.String("error", err.Error()), slog.Duration("pause", pause), slog.String(AttrTaskID, d.taskID)}
		w.Logger.LogAttrs(ctx, slog.LevelWarn, "ledger unwritable: intake paused; tasks wait in the broker and resume when it is back", attrs...)
	}
	// Full jitter above the pause, so that waiting tasks do not all come
	// back in the same instant.
	delay := pause + w.Policy.RoutingBackoff(0)
	return &LedgerPausedError{Delay: delay, Err: err}
}
