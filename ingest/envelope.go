// Package ingest is the task pipeline: the task envelope, the classifier, the
// router and its retry policy, the asynq wiring, submit, and broker
// reconciliation. It is the only package that imports asynq.
package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/lazaret/lazaret/validate"
)

// Task types.
const (
	// TypeValidate validates one item: an Envelope.
	TypeValidate = "lazaret:validate"
	// TypeHeld is a failed item parked in quarantine or audit-hold: a Held.
	TypeHeld = "lazaret:held"
)

// Queues.
const (
	QueueIngest     = "ingest"
	QueueQuarantine = "quarantine"
	QueueAuditHold  = "audit-hold"
)

// EnvelopeVersion is the envelope schema version this build reads and writes.
const EnvelopeVersion = 1

// MaxEnvelopeBytes caps an encoded envelope. Payloads travel by reference,
// so an envelope near this size is a bug or an attack; it is refused at
// submit and treated as poison by the worker.
const MaxEnvelopeBytes = 16 << 10

// Envelope is the task payload: one item, by reference (path + digest +
// size), never its bytes.
type Envelope struct {
	V             int    `json:"v"`
	CorrelationID string `json:"correlation_id"`
	BatchID       string `json:"batch_id"`
	Submitter     string `json:"submitter,omitempty"`
	ObjectID      string `json:"object_id"`
	Kind          string `json:"kind"`
	Path          string `json:"path"` // absolute: Root/Rel
	// Root is the ingest root the item is read beneath (the batch folder)
	// and Rel its path there: the worker opens Rel beneath Root and follows
	// no link (see validate.Open). Envelopes without them confine Path to
	// its own folder.
	Root   string `json:"root,omitempty"`
	Rel    string `json:"rel,omitempty"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Dev and Ino are the file's device and inode as submit opened it
	// (validate.FileID); the worker reads no other file at the path. Zero
	// in envelopes recorded before they were kept.
	Dev     uint64        `json:"dev,omitempty"`
	Ino     uint64        `json:"ino,omitempty"`
	Item    validate.Item `json:"manifest"`
	Attempt int           `json:"attempt"` // 1 for a first submission, +1 per replay
	// Message, for an interchange, restricts the task to one message (UNH
	// reference): a parked message replayed alone.
	Message string `json:"message,omitempty"`
	// Interchange is the number of that message's interchange in its file
	// (a file may hold several that reuse references); 0 for the first.
	Interchange int       `json:"interchange,omitempty"`
	ReplayOf    string    `json:"replay_of,omitempty"`
	SubmittedAt time.Time `json:"submitted_at"`
}

// Source is where the worker reads the item, and which file it must be.
// Hard links are refused there unless the caller sets Source.Hardlinks.
func (e *Envelope) Source() validate.Source {
	src := validate.Source{Root: e.Root, Rel: e.Rel, Path: e.Path}
	if e.Root == "" {
		src = validate.SourceOf(e.Path)
	}
	src.ID = validate.FileID{Dev: e.Dev, Ino: e.Ino}
	return src
}

// PoisonError: a task payload that does not decode into an Envelope
// (serialization poison). Structural: dead-lettered after one attempt.
type PoisonError struct {
	Err error
}

func (e *PoisonError) Error() string { return "undecodable task payload: " + e.Err.Error() }
func (e *PoisonError) Unwrap() error { return e.Err }

// Validate reports what an envelope lacks.
func (e *Envelope) Validate() error {
	var errs []error
	if e.V != EnvelopeVersion {
		errs = append(errs, fmt.Errorf("envelope version %d, this build reads %d", e.V, EnvelopeVersion))
	}
	for name, v := range map[string]string{"correlation_id": e.CorrelationID, "object_id": e.ObjectID, "kind": e.Kind, "path": e.Path, "sha256": e.SHA256} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is empty", name))
		}
	}
	if e.Attempt < 1 {
		errs = append(errs, fmt.Errorf("attempt %d, want 1 or more", e.Attempt))
	}
	return errors.Join(errs...)
}

// Encode marshals the envelope, refusing one over MaxEnvelopeBytes.
func (e *Envelope) Encode() ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("envelope %s: %w", e.ObjectID, err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("envelope %s is %d bytes, the cap is %d: payloads travel by reference", e.ObjectID, len(b), MaxEnvelopeBytes)
	}
	return b, nil
}

// DecodeEnvelope decodes a task payload; every failure is a *PoisonError.
func DecodeEnvelope(b []byte) (*Envelope, error) {
	if len(b) > MaxEnvelopeBytes {
		return nil, &PoisonError{fmt.Errorf("payload is %d bytes, the cap is %d", len(b), MaxEnvelopeBytes)}
	}
	var e Envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, &PoisonError{err}
	}
	if err := e.Validate(); err != nil {
		return nil, &PoisonError{err}
	}
	return &e, nil
}

// TaskID is deterministic: the same item at the same attempt always gets the
// same asynq task id, so a resubmitted batch does not duplicate work, while a
// replay (attempt + 1) is never blocked by the archived original.
func (e *Envelope) TaskID() string {
	h := sha256.Sum256([]byte(e.BatchID + "\x00" + e.ObjectID + "\x00" + e.SHA256 + "\x00" + fmt.Sprint(e.Attempt)))
	return "ing-" + hex.EncodeToString(h[:16])
}

// correlationNS roots the name-based UUIDs of correlation ids.
var correlationNS = uuid.MustParse("6b1f3c2e-8a51-4b8e-9a3c-3f0e5d1c7a42")

// CorrelationID names an item across its whole life (retries, replays): a
// name-based UUID of batch, object and digest.
func CorrelationID(batchID, objectID, sha string) string {
	return uuid.NewSHA1(correlationNS, []byte(batchID+"\x00"+objectID+"\x00"+sha)).String()
}

// Held is the payload of a task parked in quarantine or audit-hold: the
// original envelope plus why it is there.
type Held struct {
	Envelope    Envelope `json:"envelope"`
	EventID     string   `json:"event_id"`
	EventKey    string   `json:"event_key,omitempty"`
	Class       string   `json:"class"`
	Code        string   `json:"code"`
	Message     string   `json:"message"`
	Offset      *int64   `json:"offset,omitempty"`
	Page        *int     `json:"page,omitempty"`
	Destination string   `json:"destination"`
	Attempt     int      `json:"attempt"`
	// Registry is the registry version a registry-dependent failure was
	// checked against (e.g. "UN/LOCODE@3f2a1c9d0b7e"); reconcile replays
	// the item when the registry in force is another version.
	Registry string `json:"registry,omitempty"`
}
