package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// watchBatch follows a batch in the ledger until every item has an
// outcome (or timeout, when not 0, passes): a progress bar on a terminal,
// a line whenever something changed otherwise. It returns the last
// progress read. A progress bar library draws the bar (schollz/progressbar:
// terminal width, throttling and the rate/ETA display are its business).
func watchBatch(ctx context.Context, l premis.Ledger, batchID string, out io.Writer, every, timeout time.Duration) (*ingest.Progress, error) {
	var bar *progressbar.ProgressBar
	last := ""
	return followBatch(ctx, l, batchID, every, timeout, func(p *ingest.Progress) error {
		switch {
		case isTerminal(out):
			if bar == nil {
				bar = progressbar.NewOptions(p.Total(), progressbar.OptionSetWriter(rawWriter(out)), progressbar.OptionShowCount(),
					progressbar.OptionSetWidth(30), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetPredictTime(true),
					progressbar.OptionShowIts(), progressbar.OptionSetItsString("items"), progressbar.OptionFullWidth())
			}
			bar.ChangeMax(p.Total())
			bar.Describe(safeText(fmt.Sprintf("batch %s: %s", batchID, p.Tally())))
			_ = bar.Set(p.Done)
		default:
			if line := progressLine(p); line != last {
				fmt.Fprintln(out, line)
				last = line
			}
		}
		if p.Finished() && bar != nil {
			_ = bar.Finish()
			fmt.Fprintln(out)
		}
		return nil
	})
}

// watchJSON is watchBatch for scripts: the batch's progress as one JSON
// object a line (what GET /v1/batches/{id} serves as progress), whenever
// it changes; the last line is the finished batch.
func watchJSON(ctx context.Context, l premis.Ledger, batchID string, out io.Writer, every, timeout time.Duration) (*ingest.Progress, error) {
	last := ""
	return followBatch(ctx, l, batchID, every, timeout, func(p *ingest.Progress) error {
		if line := progressLine(p); line != last {
			last = line
			return writeJSON(out, p)
		}
		return nil
	})
}

// followBatch reads batchID's progress every period and hands it to show
// until the batch is finished (or timeout, when not 0, passes, or ctx
// ends); it returns the last progress read.
func followBatch(ctx context.Context, l premis.Ledger, batchID string, every, timeout time.Duration, show func(*ingest.Progress) error) (*ingest.Progress, error) {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		p, err := ingest.BatchProgress(ctx, l, batchID)
		if err != nil && !errors.Is(err, ingest.ErrUnknownBatch) {
			return nil, err
		}
		if p != nil {
			if err := show(p); err != nil {
				return p, err
			}
			if p.Finished() {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			return p, context.Cause(ctx)
		case <-deadline:
			return p, fmt.Errorf("batch %s: not finished after %s", batchID, timeout)
		case <-tick.C:
		}
	}
}

// progressLine is one plain line of a batch's progress.
func progressLine(p *ingest.Progress) string { return "batch " + p.BatchID + ": " + p.Summary() }

func isTerminal(w io.Writer) bool {
	if s, ok := w.(*safeWriter); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// waitVerdict is the exit status of a watched batch: 1 when any item
// failed (dead-letter, quarantine, audit-hold) or any message of an
// accepted interchange is parked.
func waitVerdict(p *ingest.Progress) error {
	switch {
	case p.Failed > 0:
		return &exitError{code: 1, err: fmt.Errorf("batch %s: %d of %d items failed (lazaret dlq ls / quarantine ls / hold ls --batch %s)", p.BatchID, p.Failed, p.Total(), p.BatchID)}
	case p.ParkedMessages > 0:
		return &exitError{code: 1, err: fmt.Errorf("batch %s: %d messages of %d accepted interchanges are parked (lazaret quarantine ls / hold ls --batch %s)", p.BatchID, p.ParkedMessages, p.WithParked, p.BatchID)}
	}
	return nil
}
