package ingest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
}

// SubmitResult says what a submission did, item by item.
type SubmitResult struct {
	BatchID    string       `json:"batch_id"`
	DryRun     bool         `json:"dry_run"`
	Enqueued   []string     `json:"enqueued"`   // object ids enqueued now
	Duplicates []string     `json:"duplicates"` // object ids already queued or recently finished
	Skipped    []SkipReason `json:"skipped"`    // items the ledger has already settled
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
	envs := make([]*Envelope, 0, len(m.Items))
	var errs []error
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for _, it := range m.Items {
		path, err := validate.ResolvePath(root, it.Path)
		if err != nil {
			errs = append(errs, &validate.FieldError{ObjectID: it.ObjectID, Field: "path", Rule: "inside", Value: it.Path, Message: err.Error()})
			continue
		}
		rel, _ := filepath.Rel(root, path)
		src := validate.Source{Root: root, Rel: filepath.ToSlash(rel), Path: path}
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
		f.Close()
		size := it.Size
		if size == 0 {
			size = fileSize
		}
		env := &Envelope{V: EnvelopeVersion, CorrelationID: CorrelationID(m.BatchID, it.ObjectID, it.SHA256), BatchID: m.BatchID,
			Submitter: m.Submitter, ObjectID: it.ObjectID, Kind: it.Kind, Path: path, Root: src.Root, Rel: src.Rel, SHA256: it.SHA256, Size: size,
			Item: it, Attempt: 1, SubmittedAt: now}
		if _, err := env.Encode(); err != nil {
			errs = append(errs, err)
			continue
		}
		envs = append(envs, env)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	res := &SubmitResult{BatchID: m.BatchID, DryRun: opt.DryRun, Enqueued: []string{}, Duplicates: []string{}, Skipped: []SkipReason{}}
	settled, err := l.Events(ctx, premis.Filter{BatchID: m.BatchID, Latest: true})
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	latest := map[string]premis.Event{}
	for _, e := range settled {
		latest[e.CorrelationID] = e
	}
	var todo []*Envelope
	// The batch's own fact first: how many items to expect (batch status,
	// submit --wait).
	record := []*premis.Event{batchEvent(m, opt.Software, now)}
	for _, env := range envs {
		e, seen := latest[env.CorrelationID]
		switch {
		case !seen:
			record = append(record, submissionEvent(env, opt.Software, now))
		case e.Destination == premis.Submitted, e.Destination == premis.Retry:
			// Recorded, not settled: enqueue again (a duplicate if the
			// broker still holds it).
		default:
			res.Skipped = append(res.Skipped, SkipReason{ObjectID: env.ObjectID, Destination: e.Destination, EventID: e.ID, Reason: skipReason(e)})
			continue
		}
		todo = append(todo, env)
	}
	if opt.DryRun {
		for _, env := range todo {
			res.Enqueued = append(res.Enqueued, env.ObjectID)
		}
		return res, nil
	}
	for i := 0; i < len(record); i += submitChunk {
		if _, err := l.Append(ctx, record[i:min(i+submitChunk, len(record))]...); err != nil {
			return res, fmt.Errorf("ledger: record the submission: %w (%d of %d items recorded before this; nothing enqueued)", err, i, len(record))
		}
	}
	dups, err := enqueueAll(ctx, b, todo, opt)
	for i, env := range todo {
		switch dups[i] {
		case enqueued:
			res.Enqueued = append(res.Enqueued, env.ObjectID)
		case duplicate:
			res.Duplicates = append(res.Duplicates, env.ObjectID)
		}
	}
	if err != nil {
		return res, fmt.Errorf("%w (%d of %d enqueued; the rest are recorded as submitted and reconcile-broker enqueues them)",
			err, len(res.Enqueued)+len(res.Duplicates), len(todo))
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
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range min(submitEnqueuers, len(envs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				dup, err := Enqueue(ctx, b, envs[i], opt)
				if err != nil {
					once.Do(func() { first = fmt.Errorf("enqueue %s: %w", envs[i].ObjectID, err); cancel(first) })
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
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return out, first
}

// submissionEvent records that env was submitted: an ins event with the
// envelope, so the ledger alone can enqueue it again.
func submissionEvent(env *Envelope, sw premis.Software, at time.Time) *premis.Event {
	return &premis.Event{
		Key: premis.EventKey(env.CorrelationID, env.SHA256, premis.IngestionStart, env.Attempt), Type: premis.IngestionStart,
		DateTime: at, Outcome: premis.Success, Destination: premis.Submitted, ObjectID: env.ObjectID, BatchID: env.BatchID,
		CorrelationID: env.CorrelationID, Kind: env.Kind, SHA256: env.SHA256, Size: env.Size, Path: env.Path,
		Attempt: env.Attempt, TaskID: env.TaskID(), Agent: sw.ID(), Operator: env.Submitter,
		Detail:   "submitted in batch " + env.BatchID + "; expected in the ingest queue as task " + env.TaskID(),
		Envelope: envelopeJSON(env),
	}
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
