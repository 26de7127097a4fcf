package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// SubmitOptions are the per-task broker options of a submission.
type SubmitOptions struct {
	Policy      Policy
	TaskTimeout time.Duration // per attempt; 0 = 1 hour
	Retention   time.Duration // how long a finished task id blocks a duplicate; 0 = 24 h
	// Software is the agent recorded on submission events.
	Software premis.Software
	// DryRun checks and reports, writing nothing.
	DryRun bool
	// Hardlinks are the ingest roots whose files may have more than one
	// link (see validate.HardlinkRoots); the worker must be given the same.
	Hardlinks validate.HardlinkRoots
	// Replayer, when set, replays an item whose manifest entry changed
	// since it failed (a fixed color_profile, a corrected sha256) as a new
	// attempt of the same object; *Operator is one. Without it such items
	// are reported in Skipped with what to do.
	Replayer interface {
		Replay(ctx context.Context, id string, opt ReplayOptions) (*ActionResult, error)
	}
	// Progress, when set, is told after each chunk handed to the broker
	// how many of the items to enqueue were (enqueued or duplicates).
	Progress func(done, total int)
}

// SubmitResult says what a submission did, item by item.
type SubmitResult struct {
	BatchID    string       `json:"batch_id"`
	DryRun     bool         `json:"dry_run"`
	Enqueued   []string     `json:"enqueued"`   // object ids enqueued now
	Duplicates []string     `json:"duplicates"` // object ids already queued or recently finished
	Skipped    []SkipReason `json:"skipped"`    // items the ledger has already settled
	// Replayed lists open failures whose manifest entry changed: each was
	// replayed as a new attempt of the same object (replay_of its failure).
	Replayed []SkipReason `json:"replayed"`
}

// SkipReason is why a resubmitted item was not enqueued again.
type SkipReason struct {
	ObjectID    string             `json:"object_id"`
	Destination premis.Destination `json:"destination"`
	EventID     string             `json:"event_id"`
	Reason      string             `json:"reason"`
}

// submitChunk bounds how many submission events go in one transaction.
const submitChunk = 500

// Submit records and enqueues every item of a checked manifest (see
// validate.Manifest.Check) as a TypeValidate task in the ingest queue. dir
// is the manifest's folder. Every item's file must exist; all problems are
// reported together and then nothing is recorded or enqueued.
//
// Submission is a ledger fact: each item gets an ins event (destination
// submitted, with its envelope and task id) before it is enqueued, so an
// item the broker loses is visible as submitted, never settled, and
// reconcile-broker enqueues it again. An item whose latest outcome in the
// ledger is final (accepted, discarded, replayed) or an open failure is not
// enqueued again: it is reported in Skipped. Task ids are deterministic, so
// submitting the same batch twice enqueues nothing the second time.
func Submit(ctx context.Context, l premis.Ledger, b Enqueuer, m *validate.Manifest, dir string, opt SubmitOptions) (*SubmitResult, error) {
	now := time.Now().UTC()
	var errs []error
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// What each item's envelope needs beyond its manifest entry, seen once
	// when its file is opened: an envelope is built again from these when
	// it is recorded and when it is enqueued, a chunk at a time, so a batch
	// of 100,000 items holds 100,000 of these, not of envelopes and events.
	type opened struct {
		rel  string
		size int64
		id   validate.FileID
	}
	files := make([]opened, len(m.Items))
	hardlinks := opt.Hardlinks.Allow(root)
	envOf := func(i int) *Envelope {
		it, o := m.Items[i], files[i]
		return &Envelope{V: EnvelopeVersion, CorrelationID: CorrelationID(m.BatchID, it.ObjectID, it.SHA256), BatchID: m.BatchID,
			Submitter: m.Submitter, ObjectID: it.ObjectID, Kind: it.Kind, Path: filepath.Join(root, filepath.FromSlash(o.rel)), Root: root, Rel: o.rel,
			SHA256: it.SHA256, Size: o.size, Dev: o.id.Dev, Ino: o.id.Ino, Item: it, Attempt: 1, SubmittedAt: now}
	}
	for i, it := range m.Items {
		path, err := validate.ResolvePath(root, it.Path)
		if err != nil {
			errs = append(errs, &validate.FieldError{ObjectID: it.ObjectID, Field: "path", Rule: "inside", Value: it.Path, Message: err.Error()})
			continue
		}
		rel, _ := filepath.Rel(root, path)
		src := validate.Source{Root: root, Rel: filepath.ToSlash(rel), Path: path, Hardlinks: hardlinks}
		f, fileSize, err := validate.Open(src)
		var oe *validate.OpenError
		switch {
		case errors.As(err, &oe):
			errs = append(errs, &validate.FieldError{ObjectID: it.ObjectID, Field: "path", Rule: "file", Value: it.Path, Message: oe.Reason})
			continue
		case err != nil:
			errs = append(errs, &validate.FieldError{ObjectID: it.ObjectID, Field: "path", Rule: "exists", Value: it.Path, Message: err.Error()})
			continue
		}
		id := validate.IDOf(f)
		f.Close()
		size := it.Size
		if size == 0 {
			size = fileSize
		}
		files[i] = opened{rel: src.Rel, size: size, id: id}
		if _, err := envOf(i).Encode(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	res := &SubmitResult{BatchID: m.BatchID, DryRun: opt.DryRun, Enqueued: []string{}, Duplicates: []string{}, Skipped: []SkipReason{}, Replayed: []SkipReason{}}
	settled, err := l.Events(ctx, premis.Filter{BatchID: m.BatchID, Latest: true})
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	latest := map[string]premis.Event{}
	byObject := map[string]premis.Event{} // the items' own, not messages or the batch
	for _, e := range settled {
		latest[e.CorrelationID] = e
		if e.Kind != KindBatch && !strings.Contains(e.ObjectID, "#") {
			byObject[e.ObjectID] = e
		}
	}
	settled = nil
	var replays []replayOf
	var todo []int // items to enqueue, by index
	// The batch's own fact first: how many items to expect (batch status,
	// submit --wait). Then the submission events, recorded a chunk at a
	// time as they are decided; every one before any item is enqueued.
	record := []*premis.Event{batchEvent(m, opt.Software, now)}
	recorded := 0
	flush := func() error {
		if opt.DryRun || len(record) == 0 {
			record = record[:0]
			return nil
		}
		if _, err := l.Append(ctx, record...); err != nil {
			return fmt.Errorf("ledger: record the submission: %w (%d items recorded before this; nothing enqueued)", err, recorded)
		}
		recorded += len(record)
		record = record[:0]
		return nil
	}
	for i := range m.Items {
		env := envOf(i)
		e, seen := latest[env.CorrelationID]
		if !seen {
			// The same object with another digest: its entry changed.
			e, seen = byObject[env.ObjectID]
		}
		if seen && slices.Contains(failureDestinations, e.Destination) && entryChanged(e, env) {
			replays = append(replays, replayOf{env: env, failure: e})
			continue
		}
		switch {
		case !seen:
			record = append(record, submissionEvent(env, opt.Software, now))
			if len(record) == submitChunk {
				if err := flush(); err != nil {
					return res, err
				}
			}
		case e.Destination == premis.Submitted, e.Destination == premis.Retry:
			// Recorded, not settled: enqueue again (a duplicate if the
			// broker still holds it).
		default:
			res.Skipped = append(res.Skipped, SkipReason{ObjectID: env.ObjectID, Destination: e.Destination, EventID: e.ID, Reason: skipReason(e)})
			continue
		}
		todo = append(todo, i)
	}
	if err := flush(); err != nil {
		return res, err
	}
	if opt.DryRun {
		for _, i := range todo {
			res.Enqueued = append(res.Enqueued, m.Items[i].ObjectID)
		}
		return res, replayChanged(ctx, opt, m, replays, res)
	}
	if err := replayChanged(ctx, opt, m, replays, res); err != nil {
		return res, err
	}
	for start := 0; start < len(todo); start += submitChunk {
		chunk := todo[start:min(start+submitChunk, len(todo))]
		envs := make([]*Envelope, len(chunk))
		for j, i := range chunk {
			envs[j] = envOf(i)
		}
		dups, err := enqueueAll(ctx, b, envs, opt)
		for j, env := range envs {
			switch dups[j] {
			case enqueued:
				res.Enqueued = append(res.Enqueued, env.ObjectID)
			case duplicate:
				res.Duplicates = append(res.Duplicates, env.ObjectID)
			}
		}
		if opt.Progress != nil {
			opt.Progress(len(res.Enqueued)+len(res.Duplicates), len(todo))
		}
		if err != nil {
			return res, fmt.Errorf("%w (%d of %d enqueued; the rest are recorded as submitted and reconcile-broker enqueues them)",
				err, len(res.Enqueued)+len(res.Duplicates), len(todo))
		}
	}
	return res, nil
}

// submitEnqueuers bounds the hand-offs to the broker in flight at once: a
// round trip each, so a batch of 100,000 items is not 100,000 round trips
// end to end.
const submitEnqueuers = 16

type enqueueResult uint8

const (
	notTried enqueueResult = iota
	enqueued
	duplicate
)

// enqueueAll enqueues every envelope, submitEnqueuers at a time, and says
// for each whether it was enqueued, was a duplicate, or was not tried
// because an earlier hand-off failed (the first error is returned).
func enqueueAll(ctx context.Context, b Enqueuer, envs []*Envelope, opt SubmitOptions) ([]enqueueResult, error) {
	out := make([]enqueueResult, len(envs))
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	failed := make(chan struct{})
	for range min(submitEnqueuers, len(envs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				// Hand-offs under way finish: a cancelled one could reach
				// Redis and still be reported as not enqueued.
				dup, err := Enqueue(ctx, b, envs[i], opt)
				if err != nil {
					once.Do(func() { first = fmt.Errorf("enqueue %s: %w", envs[i].ObjectID, err); close(failed) })
					continue
				}
				out[i] = enqueued
				if dup {
					out[i] = duplicate
				}
			}
		}()
	}
feed:
	for i := range envs {
		select {
		case next <- i:
		case <-failed:
			break feed
		case <-ctx.Done():
			once.Do(func() { first = context.Cause(ctx); close(failed) })
			break feed
		}
	}
	close(next)
	wg.Wait()
	return out, first
}

// replayOf is a resubmitted item whose entry changed since it failed.
type replayOf struct {
	env     *Envelope
	failure premis.Event
}

// entryChanged says whether env, resubmitted, differs from the manifest
// entry of the attempt that failed (recorded with the failure).
func entryChanged(failed premis.Event, env *Envelope) bool {
	if failed.SHA256 != "" && failed.CorrelationID != env.CorrelationID {
		return true // another digest: another file, or a corrected sha256
	}
	prev, err := DecodeEnvelope(failed.Envelope)
	if err != nil {
		return false
	}
	a, _ := json.Marshal(prev.Item)
	b, _ := json.Marshal(env.Item)
	return !bytes.Equal(a, b)
}

// replayChanged replays each changed open failure with its resubmitted
// entry, or reports it skipped when there is no Replayer.
func replayChanged(ctx context.Context, opt SubmitOptions, m *validate.Manifest, replays []replayOf, res *SubmitResult) error {
	for _, r := range replays {
		sr := SkipReason{ObjectID: r.env.ObjectID, Destination: r.failure.Destination, EventID: r.failure.ID}
		if opt.Replayer == nil {
			sr.Reason = "changed since it failed in " + string(r.failure.Destination) + ": replay it with the correction (lazaret " +
				cliFor(r.failure.Destination) + " replay " + r.failure.ID + " --set field=value, or --file)"
			res.Skipped = append(res.Skipped, sr)
			continue
		}
		who := m.Submitter
		if who == "" {
			who = "submitter"
		}
		ar, err := opt.Replayer.Replay(ctx, r.failure.ID, ReplayOptions{Operator: who, Reason: "resubmitted with a changed manifest entry",
			Resubmitted: r.env, DryRun: opt.DryRun})
		if err != nil {
			return fmt.Errorf("replay %s with its changed entry: %w", r.env.ObjectID, err)
		}
		sr.Reason = fmt.Sprintf("changed since it failed in %s: replayed as attempt %d (task %s)", r.failure.Destination, ar.Replay.Attempt, ar.TaskID)
		res.Replayed = append(res.Replayed, sr)
	}
	return nil
}

// submissionEvent records that env was submitted: an ins event with the
// envelope, so the ledger alone can enqueue it again.
func submissionEvent(env *Envelope, sw premis.Software, at time.Time) *premis.Event {
	ev := newEvent(env, premis.IngestionStart, env.Attempt, env.TaskID(), sw)
	ev.DateTime, ev.Outcome, ev.Destination, ev.Operator = at, premis.Success, premis.Submitted, env.Submitter
	ev.ReplayOf = "" // a submission starts an item; replays are recorded by Replay
	ev.Detail = "submitted in batch " + env.BatchID + "; expected in the ingest queue as task " + env.TaskID()
	ev.Envelope = envelopeJSON(env)
	return ev
}

func skipReason(e premis.Event) string {
	switch e.Destination {
	case premis.Accepted:
		return "already accepted"
	case premis.Discarded:
		return "discarded by " + e.Operator + ": a resubmission does not revive it"
	case premis.Replayed:
		return "replayed by " + e.Operator + " as a new attempt"
	}
	return "an open failure in " + string(e.Destination) + ": replay or discard it (see lazaret " + cliFor(e.Destination) + " show " + e.ID + ")"
}

func cliFor(d premis.Destination) string {
	switch d {
	case premis.Quarantined:
		return "quarantine"
	case premis.AuditHold:
		return "hold"
	}
	return "dlq"
}

// Enqueue puts one envelope on the ingest queue under its deterministic task
// id. duplicate is true when that id is already taken (queued, or finished
// within the retention window).
func Enqueue(ctx context.Context, b Enqueuer, env *Envelope, opt SubmitOptions) (duplicate bool, err error) {
	payload, err := env.Encode()
	if err != nil {
		return false, err
	}
	if opt.TaskTimeout <= 0 {
		opt.TaskTimeout = time.Hour
	}
	if opt.Retention <= 0 {
		opt.Retention = 24 * time.Hour
	}
	_, err = b.EnqueueContext(ctx, asynq.NewTask(TypeValidate, payload), asynq.Queue(QueueIngest), asynq.TaskID(env.TaskID()),
		asynq.MaxRetry(opt.Policy.BrokerRetries()), asynq.Timeout(opt.TaskTimeout), asynq.Retention(opt.Retention))
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return true, nil
	}
	return false, err
}
