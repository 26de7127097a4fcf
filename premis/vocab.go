package premis

// EventType is a PREMIS event type from the Library of Congress preservation
// vocabulary (http://id.loc.gov/vocabulary/preservation/eventType/). The value
// is the vocabulary code; Label and URI give the other two spellings.
type EventType string

const (
	// Quarantine: the object was set aside because a check failed.
	Quarantine EventType = "qua"
	// Unquarantine: the object left quarantine (replayed, released).
	Unquarantine EventType = "unq"
	// Validation: structure, decoding or rules were checked.
	Validation EventType = "val"
	// FormatIdentification: the format was identified from its bytes.
	FormatIdentification EventType = "for"
	// FixityCheck: the message digest was compared with the expected one.
	FixityCheck EventType = "fix"
	// Ingestion: the object was accepted into the repository; with outcome
	// fai, it could not be taken in because its file could not be read
	// (missing, refused by the confinement, unreadable): no validation ran.
	Ingestion EventType = "ing"
	// Deletion: the object was discarded, with a recorded reason.
	Deletion EventType = "del"
	// IngestionStart: the object was submitted, and the ledger knows it is
	// expected before the broker holds it; or a dead letter was replayed,
	// which starts its ingestion again (it was never quarantined, so the
	// replay is no unq).
	IngestionStart EventType = "ins"
)

// EventTypes lists every event type Lazaret writes.
func EventTypes() []EventType {
	return []EventType{Quarantine, Unquarantine, Validation, FormatIdentification, FixityCheck, Ingestion, Deletion, IngestionStart}
}

// Label is the vocabulary's preferred label.
func (t EventType) Label() string {
	switch t {
	case Quarantine:
		return "quarantine"
	case Unquarantine:
		return "unquarantine"
	case Validation:
		return "validation"
	case FormatIdentification:
		return "format identification"
	case FixityCheck:
		return "fixity check"
	case Ingestion:
		return "ingestion"
	case Deletion:
		return "deletion"
	case IngestionStart:
		return "ingestion start"
	}
	return string(t)
}

// ArchivematicaLabel is t as Archivematica's METS schematron recognises an
// eventType: the vocabulary's label when Archivematica knows it, else the
// label of the check the event records. An ingestion start is a part of
// ingestion (the LoC vocabulary's narrower term); Lazaret's quarantine
// event is the failed check that set the object aside (its detail names
// the stage, its outcome detail the routing). The term itself stays the
// event's valueURI. Unquarantine and deletion, which Archivematica does
// not list, keep their own labels.
func (t EventType) ArchivematicaLabel() string {
	switch t {
	case IngestionStart:
		return Ingestion.Label()
	case Quarantine:
		return Validation.Label()
	}
	return t.Label()
}

// URI is the vocabulary term's URI.
func (t EventType) URI() string { return EventTypeAuthority + string(t) }

// Valid reports whether t is one of EventTypes.
func (t EventType) Valid() bool { return contains(EventTypes(), t) }

// Outcome is a PREMIS event outcome from the LoC vocabulary
// (http://id.loc.gov/vocabulary/preservation/eventOutcome/).
type Outcome string

const (
	// Success: the event did what it set out to do.
	Success Outcome = "suc"
	// Failure: the check failed; Class says why.
	Failure Outcome = "fai"
	// Warning: it passed, with something worth a look (see the note).
	Warning Outcome = "war"
)

// Outcomes lists every outcome.
func Outcomes() []Outcome { return []Outcome{Success, Failure, Warning} }

// URI is the outcome's vocabulary URI.
func (o Outcome) URI() string { return OutcomeAuthority + string(o) }

// Label is the vocabulary's preferred label.
func (o Outcome) Label() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "fail"
	case Warning:
		return "warning"
	}
	return string(o)
}

// Vocabulary roots.
const (
	EventTypeAuthority  = "http://id.loc.gov/vocabulary/preservation/eventType/"
	OutcomeAuthority    = "http://id.loc.gov/vocabulary/preservation/eventOutcome/"
	AgentRoleAuthority  = "http://id.loc.gov/vocabulary/preservation/eventRelatedAgentRole/"
	ObjectRoleAuthority = "http://id.loc.gov/vocabulary/preservation/eventRelatedObjectRole/"
)

// Class is the failure taxonomy: the routing key for every failure.
type Class string

const (
	// Transient: the world was not ready (timeout, connection refused,
	// storage or ledger busy). Retried with backoff.
	Transient Class = "transient"
	// Structural: the bytes are broken (truncated or corrupt TIFF, fixity
	// mismatch, broken EDIFACT envelope, undecodable task). Dead-lettered
	// after one attempt.
	Structural Class = "structural"
	// Semantic: well-formed but wrong by a rule (format conflict, unknown
	// code, missing colour profile). Quarantined.
	Semantic Class = "semantic"
	// Regulatory: breaks a compliance rule (VGM, tariff). Quarantined.
	Regulatory Class = "regulatory"
	// Unknown: anything unclassified. Quarantined so it is surfaced, never
	// retried forever and never dropped.
	Unknown Class = "unknown"
)

// Classes lists every class.
func Classes() []Class { return []Class{Transient, Structural, Semantic, Regulatory, Unknown} }

// Valid reports whether c is one of Classes.
func (c Class) Valid() bool { return contains(Classes(), c) }

// Destination is where an outcome was routed.
type Destination string

const (
	// Accepted: the item passed and was ingested.
	Accepted Destination = "accept"
	// Retry: scheduled again with backoff.
	Retry Destination = "retry"
	// DeadLetter: asynq's archived set (the DLQ), for engineering.
	DeadLetter Destination = "dead-letter"
	// Quarantined: the quarantine queue, reconciled then replayed.
	Quarantined Destination = "quarantine"
	// AuditHold: the poison cap was reached; a human decides.
	AuditHold Destination = "audit-hold"
	// Discarded: removed by an operator with a reason.
	Discarded Destination = "discarded"
	// Replayed: handed back to ingest as a fresh task.
	Replayed Destination = "replayed"
	// Submitted: recorded as expected and handed to the broker; no worker
	// has decided its fate yet.
	Submitted Destination = "submitted"
)

// Destinations lists every destination.
func Destinations() []Destination {
	return []Destination{Accepted, Retry, DeadLetter, Quarantined, AuditHold, Discarded, Replayed, Submitted}
}

// Terminal reports whether an item routed to d has settled: no worker will
// touch it again without a person or a reconcile acting on it.
func (d Destination) Terminal() bool {
	switch d {
	case Accepted, DeadLetter, Quarantined, AuditHold, Discarded:
		return true
	}
	return false
}

// Parked reports whether an item routed to d waits in a queue no worker
// consumes, for a reconcile or a person: quarantine or audit-hold.
func (d Destination) Parked() bool { return d == Quarantined || d == AuditHold }

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
