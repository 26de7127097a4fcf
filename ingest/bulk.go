package ingest

import (
	"context"
	"fmt"
	"time"
)

// BulkOptions select open failures by filter and resolve each the same way.
type BulkOptions struct {
	Filter FailureFilter
	// Action is "replay" or "discard".
	Action   string
	Operator string
	Reason   string            // required for discard
	Set      map[string]string // replay: manifest corrections for every item
	Rate     float64           // actions per second; 0 = 10
	Limit    int               // at most this many actions; 0 = every match
	DryRun   bool
	// Progress, when set, is told of every decision as it is made.
	Progress func(BulkDecision)
}

// BulkDecision is what a bulk action did with one failure.
type BulkDecision struct {
	Failure Failure       `json:"failure"`
	Action  string        `json:"action"` // the action, or "error"
	Result  *ActionResult `json:"result,omitempty"`
	Detail  string        `json:"detail,omitempty"`
	At      time.Time     `json:"at"`
}

// Bulk applies one operator action to every open failure the filter
// selects (twelve quarantined messages with the same code need one
// command, not twelve), throttled to opt.Rate per second. Each action is
// the single action, with its compare-and-set: a failure another operator
// resolves meanwhile is reported as an error and the rest go on. A dry run
// lists what would be done and writes nothing.
func (o *Operator) Bulk(ctx context.Context, opt BulkOptions) ([]BulkDecision, error) {
	switch opt.Action {
	case "replay":
	case "discard":
		if opt.Reason == "" {
			return nil, fmt.Errorf("a bulk discard needs a reason")
		}
	default:
		return nil, fmt.Errorf("bulk action %q: want replay or discard", opt.Action)
	}
	if opt.Operator == "" {
		return nil, fmt.Errorf("a bulk %s needs an operator", opt.Action)
	}
	if opt.Rate <= 0 {
		opt.Rate = 10
	}
	f := opt.Filter
	f.Limit = opt.Limit
	fs, err := Failures(ctx, o.Ledger, f)
	if err != nil {
		return nil, err
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / opt.Rate))
	defer tick.Stop()
	out := make([]BulkDecision, 0, len(fs))
	for i, fl := range fs {
		if i > 0 && !opt.DryRun {
			select {
			case <-ctx.Done():
				return out, context.Cause(ctx)
			case <-tick.C:
			}
		}
		d := BulkDecision{Failure: fl, Action: opt.Action}
		var res *ActionResult
		var err error
		if opt.Action == "replay" {
			res, err = o.Replay(ctx, fl.ID, ReplayOptions{Operator: opt.Operator, Reason: opt.Reason, Set: opt.Set, DryRun: opt.DryRun})
		} else {
			res, err = o.Discard(ctx, fl.ID, opt.Operator, opt.Reason, opt.DryRun)
		}
		if err != nil {
			d.Action, d.Detail = "error", err.Error()
		}
		d.Result, d.At = res, time.Now()
		if opt.Progress != nil {
			opt.Progress(d)
		}
		out = append(out, d)
	}
	return out, nil
}
