package ledgersql

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"

	"github.com/lazaret/lazaret/premis"
)

// The envelope column holds an event's task envelope (premis.Event's
// Envelope: the JSON a replay reads the item back from) as it is, or
// DEFLATE-compressed against a dictionary: the submission and every
// failure carry one. The chain hashes the envelope as the event holds it,
// never its stored form, so how it is stored may change without a hash
// changing; reads give the JSON back.
//
// A stored envelope that begins with byte 0 is compressed: 0, a format
// byte, then the raw DEFLATE stream. Any other is the envelope itself, as
// every row written before compression holds it. The formats:
//
//   - envelopeFlate1: against envelopeDict, the envelope's field names
//     (some 220 bytes for a master's envelope of 680).
//   - envelopeFlate2: against envelopeDict followed by what the envelope
//     repeats of its own row (rowDict: the submitter, batch, correlation,
//     object, path and digest), so those cost a back-reference each
//     instead of their letters (some 120 bytes for the same envelope).
//     Reading it needs the row's other columns, read already; a column
//     changed past the ledger then reads as another envelope or none, and
//     the chain, which hashes both, shows the change.
const (
	envelopeFlate1 = 1
	envelopeFlate2 = 2
)

// MaxEnvelope bounds an envelope, stored or read back: an envelope is a
// few hundred bytes (the worker refuses one of 16 KiB), so a stored one
// that inflates past this is damage or a bomb, not a task.
const MaxEnvelope = 1 << 20

// envelopeDict is what compression of an envelope starts from: the field
// names and common values of the envelopes the worker writes, in their
// order. It is part of both stored formats: a new dictionary is a new
// format byte, never an edit of this one.
var envelopeDict = []byte(`{"v":1,"correlation_id":"","batch_id":"","submitter":"","object_id":"","kind":"edifact","kind":"tiff","path":"/","root":"/","rel":"",` +
	`"sha256":"","size":,"dev":,"ino":,"manifest":{"object_id":"","kind":"tiff","path":"","sha256":"","size":,"format":"image/tiff",` +
	`"color_profile":"sRGB IEC61966-2.1","resolution_dpi":"","message_types":[""]},"attempt":1,"message":"","replay_of":"","submitted_at":"20`)

// envelopeCoder holds what one encoding of an envelope reuses.
type envelopeCoder struct {
	dict  []byte
	flate *flate.Writer
}

// envelopeCoders keeps coders for EncodeEnvelope. klauspost/compress
// (already the default inflater of TIFF strips) at its level 3 stores a
// master's envelope in as few bytes as the standard library's best level
// does (221 against 220 with envelopeDict alone) in a fifth of the time
// (10 µs against 50-90); the stream is plain DEFLATE either way.
var envelopeCoders = newFreeList(func() *envelopeCoder {
	w, err := flate.NewWriter(io.Discard, 3) // its dictionary is each row's (ResetDict)
	if err != nil {
		panic(err) // only for a bad level
	}
	return &envelopeCoder{flate: w}
})

// freeList keeps up to freeListSize values for reuse. Not a sync.Pool for
// the writers: the collector empties a pool within two cycles, and a new
// writer costs 1.1-1.2 MB and 1-2 ms, where a write costs 5-10 µs; a
// worker's heap is small, so its collections come every few items, and a
// pool made a new writer for nearly every other record.
type freeList[T any] struct {
	free  chan T
	fresh func() T
}

// freeListSize bounds a free list: encodes run on the group committer's
// goroutine and a few submitters at once.
const freeListSize = 8

func newFreeList[T any](fresh func() T) *freeList[T] {
	return &freeList[T]{free: make(chan T, freeListSize), fresh: fresh}
}

func (f *freeList[T]) get() T {
	select {
	case v := <-f.free:
		return v
	default:
		return f.fresh()
	}
}

func (f *freeList[T]) put(v T) {
	select {
	case f.free <- v:
	default: // full: left to the collector
	}
}

// inflaters keeps readers for DecodeEnvelope: a new one allocates some
// 40 KB of window and tables, many times the envelope.
var inflaters sync.Pool

// EncodeEnvelope is e's envelope as the envelope column stores it:
// compressed against e's row (envelopeFlate2) when that is shorter (or the
// envelope begins with byte 0, which would read as compressed), else the
// envelope itself; nil stays nil.
func EncodeEnvelope(e *premis.Event) ([]byte, error) {
	env := e.Envelope
	if len(env) == 0 {
		return env, nil
	}
	if len(env) > MaxEnvelope {
		return nil, fmt.Errorf("envelope: %d bytes, more than %d", len(env), MaxEnvelope)
	}
	c := envelopeCoders.get()
	defer envelopeCoders.put(c)
	c.dict = rowDict(c.dict[:0], e)
	var b bytes.Buffer
	b.Grow(len(env)/3 + 16)
	b.Write([]byte{0, envelopeFlate2})
	c.flate.ResetDict(&b, c.dict)
	defer c.flate.Reset(io.Discard) // let go of b
	if _, err := c.flate.Write(env); err != nil {
		return nil, err
	}
	if err := c.flate.Close(); err != nil {
		return nil, err
	}
	if b.Len() >= len(env) && env[0] != 0 {
		return env, nil
	}
	return b.Bytes(), nil
}

// maxRowValue bounds a row value rowDict takes: a longer one (a path past
// 1 KiB, or a value changed past the ledger) is left out of the
// dictionary, by the reader as by the writer, so a row's dictionary
// stays small whatever its columns hold.
const maxRowValue = 1024

// rowDict appends to dict envelopeDict followed by what an envelope
// repeats of row e, the values its writer and its reader both know.
func rowDict(dict []byte, e *premis.Event) []byte {
	dict = append(dict, envelopeDict...)
	for _, v := range [...]string{e.Operator, e.BatchID, e.CorrelationID, e.ObjectID, e.Path, e.SHA256} {
		if len(v) <= maxRowValue {
			dict = append(dict, v...)
		}
	}
	return dict
}

// DecodeEnvelope is the envelope stored holds (see EncodeEnvelope) for
// row e, whose other columns are read already.
func DecodeEnvelope(stored []byte, e *premis.Event) ([]byte, error) {
	if len(stored) == 0 || stored[0] != 0 {
		return stored, nil
	}
	var dict []byte
	switch {
	case len(stored) >= 2 && stored[1] == envelopeFlate1:
		dict = envelopeDict
	case len(stored) >= 2 && stored[1] == envelopeFlate2:
		dict = rowDict(make([]byte, 0, len(envelopeDict)+256), e)
	default:
		return nil, errors.New("envelope: compressed in a format this build does not read")
	}
	env, err := inflate(stored[2:], dict, MaxEnvelope)
	switch {
	case err != nil:
		return nil, fmt.Errorf("envelope: %w", err)
	case len(env) == 0:
		return nil, errors.New("envelope: compressed to nothing")
	}
	return env, nil
}

// inflate is the raw DEFLATE stream z compressed against dict, refused
// when it inflates past limit bytes or bytes follow it.
func inflate(z, dict []byte, limit int) ([]byte, error) {
	src := bytes.NewReader(z)
	r, _ := inflaters.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReaderDict(src, dict)
	} else if err := r.(flate.Resetter).Reset(src, dict); err != nil {
		return nil, err
	}
	defer inflaters.Put(r)
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	switch {
	case err != nil:
		return nil, err
	case len(out) > limit:
		return nil, fmt.Errorf("inflates past %d bytes", limit)
	case src.Len() > 0:
		// The inflater reads a ByteReader byte by byte, never ahead: what
		// is left follows the stream's last block, and would hide there.
		return nil, fmt.Errorf("%d bytes after the compressed stream", src.Len())
	}
	return out, nil
}
