package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
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
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var bar *progressbar.ProgressBar
	last := ""
	for {
		p, err := ingest.BatchProgress(ctx, l, batchID)
		if err != nil && !errors.Is(err, ingest.ErrUnknownBatch) {
			return nil, err
		}
		if p != nil {
			switch {
			case isTerminal(out):
				if bar == nil {
					bar = progressbar.NewOptions(p.Total(), progressbar.OptionSetWriter(out), progressbar.OptionShowCount(),
						progressbar.OptionSetWidth(30), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetPredictTime(true),
						progressbar.OptionShowIts(), progressbar.OptionSetItsString("items"), progressbar.OptionFullWidth())
				}
				bar.ChangeMax(p.Total())
				bar.Describe(fmt.Sprintf("batch %s: %s", batchID, tally(p)))
				_ = bar.Set(p.Done)
			default:
				if line := progressLine(p); line != last {
					fmt.Fprintln(out, line)
					last = line
				}
			}
			if p.Finished() {
				if bar != nil {
					_ = bar.Finish()
					fmt.Fprintln(out)
				}
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
func progressLine(p *ingest.Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch %s: %d/%d done (%s), %d pending, %d retrying", p.BatchID, p.Done, p.Total(), tally(p), p.Pending, p.Retry)
	if p.ItemsPerSecond > 0 {
		fmt.Fprintf(&b, ", %.1f items/s", p.ItemsPerSecond)
	}
	if p.ETA > 0 {
		fmt.Fprintf(&b, ", about %s left", p.ETA.Round(time.Second))
	}
	return b.String()
}

// tally names the settled items by destination, accepted first.
func tally(p *ingest.Progress) string {
	order := []struct {
		d    premis.Destination
		name string
	}{{premis.Accepted, "accepted"}, {premis.DeadLetter, "dead-lettered"}, {premis.Quarantined, "quarantined"},
		{premis.AuditHold, "on audit-hold"}, {premis.Discarded, "discarded"}}
	var parts []string
	for _, o := range order {
		if n := p.ByDestination[o.d]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, o.name))
		}
	}
	if len(p.Messages) > 0 {
		n, accepted := 0, p.Messages[premis.Accepted]
		for _, c := range p.Messages {
			n += c
		}
		parts = append(parts, fmt.Sprintf("messages %d/%d accepted", accepted, n))
	}
	if len(parts) == 0 {
		return "none settled yet"
	}
	return strings.Join(parts, ", ")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// waitVerdict is the exit status of a watched batch: 1 when any item
// failed (dead-letter, quarantine, audit-hold).
func waitVerdict(p *ingest.Progress) error {
	if p.Failed == 0 {
		return nil
	}
	return &exitError{code: 1, err: fmt.Errorf("batch %s: %d of %d items failed (lazaret dlq ls / quarantine ls / hold ls --batch %s)", p.BatchID, p.Failed, p.Total(), p.BatchID)}
}
