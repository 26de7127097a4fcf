package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/validate"
)

// SubmitOptions are the per-task broker options of a submission.
type SubmitOptions struct {
	Policy      Policy
	TaskTimeout time.Duration // per attempt; 0 = 1 hour
	Retention   time.Duration // how long a finished task id blocks a duplicate; 0 = 24 h
}

// SubmitResult says what a submission did.
type SubmitResult struct {
	BatchID    string
	Enqueued   []string // object ids enqueued now
	Duplicates []string // object ids already queued or recently finished
}

// Submit enqueues every item of a checked manifest (see
// validate.Manifest.Check) as a TypeValidate task in the ingest queue. dir is
// the manifest's folder. Every item's file must exist; all problems are
// reported together and then nothing is enqueued. Task ids are deterministic,
// so submitting the same batch twice enqueues nothing the second time.
func Submit(ctx context.Context, b Enqueuer, m *validate.Manifest, dir string, opt SubmitOptions) (*SubmitResult, error) {
	if opt.TaskTimeout <= 0 {
		opt.TaskTimeout = time.Hour
	}
	if opt.Retention <= 0 {
		opt.Retention = 24 * time.Hour
	}
	now := time.Now().UTC()
	envs := make([]*Envelope, 0, len(m.Items))
	var errs []error
	for _, it := range m.Items {
		path, err := validate.ResolvePath(dir, it.Path)
		if err != nil {
			errs = append(errs, &validate.FieldError{ObjectID: it.ObjectID, Field: "path", Rule: "inside", Value: it.Path, Message: err.Error()})
			continue
		}
		st, err := os.Stat(path)
		switch {
		case err != nil:
			errs = append(errs, &validate.FieldError{ObjectID: it.ObjectID, Field: "path", Rule: "exists", Value: it.Path, Message: err.Error()})
			continue
		case !st.Mode().IsRegular():
			errs = append(errs, &validate.FieldError{ObjectID: it.ObjectID, Field: "path", Rule: "file", Value: it.Path, Message: "is not a regular file"})
			continue
		}
		size := it.Size
		if size == 0 {
			size = st.Size()
		}
		env := &Envelope{V: EnvelopeVersion, CorrelationID: CorrelationID(m.BatchID, it.ObjectID, it.SHA256), BatchID: m.BatchID,
			Submitter: m.Submitter, ObjectID: it.ObjectID, Kind: it.Kind, Path: path, SHA256: it.SHA256, Size: size,
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
	res := &SubmitResult{BatchID: m.BatchID}
	for _, env := range envs {
		dup, err := Enqueue(ctx, b, env, opt)
		if err != nil {
			return res, fmt.Errorf("enqueue %s: %w (%d of %d enqueued before this)", env.ObjectID, err, len(res.Enqueued), len(envs))
		}
		if dup {
			res.Duplicates = append(res.Duplicates, env.ObjectID)
		} else {
			res.Enqueued = append(res.Enqueued, env.ObjectID)
		}
	}
	return res, nil
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
		asynq.MaxRetry(opt.Policy.MaxRetry), asynq.Timeout(opt.TaskTimeout), asynq.Retention(opt.Retention))
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return true, nil
	}
	return false, err
}
