package ledgersql

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/lazaret/lazaret/premis"
)

// The packed format is how a SQLite ledger created since it stores an
// event (Dialect.Packed); a ledger written before it keeps its text
// columns for good, since an idempotency lookup, the replace guard and the
// head's trigger compare stored values, and a ledger half in one form and
// half in the other would not find its own rows. It stores the same
// events in about a third fewer bytes:
//
//   - identifiers and digests (id, key, correlation_id, sha256, hash;
//     latest.correlation_id and ledger_head.last_hash)
//     as bytes when they are in their canonical text form, a lowercase
//     UUID (16 bytes for 36) or 64 lowercase hex digits (32 bytes for
//     64), as text otherwise (Pack). A value has one stored form, so an
//     equality test finds it either way; a canonical value stored as
//     text reads as damage.
//   - of prev_hash, its first four bytes (PackPrev): the whole is the hash
//     of the row before, which reads select beside it (SelectPacked);
//     the four bytes still tell a link that does not hold from a changed
//     row (UnpackPrev).
//   - datetime as an integer: nanoseconds since 1970 (8 bytes or fewer,
//     for 27 or more), which also orders as time does.
//   - detail compressed against what a detail repeats of its row (see
//     EncodeDetail) when that is shorter: the submission's 112 bytes in
//     14.
//   - steps always in the packed form, whose heads are [type, outcome]
//     pairs (see EncodeStepsPacked).
//
// The chain hashes the event's values, never their stored form: an event
// hashes the same in either format.

// uuidLen and hexLen are the canonical text forms Pack stores as bytes.
const (
	uuidLen = 36
	hexLen  = 64
)

// Pack is how a packed ledger stores the value of an identifier or digest
// column: the bytes of a canonical UUID or 64-digit hex text, the text
// itself otherwise.
func Pack(s string) any {
	switch {
	case len(s) == hexLen && lowerHex(s):
		b, _ := hex.DecodeString(s)
		return b
	case len(s) == uuidLen && canonicalUUID(s):
		var b [16]byte
		hex.Decode(b[0:4], []byte(s[0:8]))
		hex.Decode(b[4:6], []byte(s[9:13]))
		hex.Decode(b[6:8], []byte(s[14:18]))
		hex.Decode(b[8:10], []byte(s[19:23]))
		hex.Decode(b[10:], []byte(s[24:]))
		return b[:]
	}
	return s
}

// Unpack is the text a packed column's stored value v stands for. A
// value Pack would not have written (bytes of another length, canonical
// text stored as text, another type) is an error: equality lookups would
// not find it.
func Unpack(v any) (string, error) {
	switch v := v.(type) {
	case []byte:
		switch len(v) {
		case hexLen / 2:
			return hex.EncodeToString(v), nil
		case 16:
			var b [uuidLen]byte
			hex.Encode(b[0:8], v[0:4])
			b[8] = '-'
			hex.Encode(b[9:13], v[4:6])
			b[13] = '-'
			hex.Encode(b[14:18], v[6:8])
			b[18] = '-'
			hex.Encode(b[19:23], v[8:10])
			b[23] = '-'
			hex.Encode(b[24:], v[10:])
			return string(b[:]), nil
		}
		return "", fmt.Errorf("%d bytes, want 16 (a UUID) or 32 (a digest)", len(v))
	case string:
		if _, packs := Pack(v).([]byte); packs {
			return "", errors.New("canonical text stored as text, where the ledger stores its bytes")
		}
		return v, nil
	}
	return "", fmt.Errorf("a %T, want bytes or text", v)
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func canonicalUUID(s string) bool {
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// prevLen is how much of prev_hash a packed ledger stores: the hash's
// first bytes, which tell a row whose link does not hold from one that
// was changed (see UnpackPrev); the whole hash is the row before's.
const prevLen = 4

// PackPrev is how a packed ledger stores prev_hash: the first prevLen
// bytes of a canonical hash, else (a hash Append never makes) Pack's.
func PackPrev(h string) any {
	if b, ok := Pack(h).([]byte); ok && len(b) == hexLen/2 {
		return b[:prevLen:prevLen]
	}
	return Pack(h)
}

// UnpackPrev is the prev_hash a packed row stands for: stored is its
// prev_hash column, before the hash of the row before it (nil for the
// first row). When stored begins before's hash, that hash; when it does
// not, stored itself in hex followed by "…", which no hash equals, so that
// the chain shows a link that does not hold (events removed or inserted
// between) rather than a changed row; "" for none stored.
func UnpackPrev(stored, before any) (string, error) {
	prev := ChainGenesis
	if before != nil {
		var err error
		if prev, err = Unpack(before); err != nil {
			return "", fmt.Errorf("the hash of the row before: %w", err)
		}
	}
	switch v := stored.(type) {
	case string:
		if v == "" {
			return "", nil
		}
		return Unpack(v)
	case []byte:
		switch {
		case len(v) == 0:
			return "", nil
		case len(v) != prevLen:
			return "", fmt.Errorf("%d bytes, want the %d a packed ledger stores of prev_hash", len(v), prevLen)
		case strings.HasPrefix(prev, hex.EncodeToString(v)):
			return prev, nil
		}
		return hex.EncodeToString(v) + "…", nil
	}
	return "", fmt.Errorf("a %T, want bytes or text", stored)
}

// The times a packed ledger can store: an int64 of nanoseconds.
var (
	minPackedTime = time.Unix(0, math.MinInt64).UTC()
	maxPackedTime = time.Unix(0, math.MaxInt64).UTC()
)

// PackTime is how a packed ledger stores an event's datetime, and what a
// filter compares it with: nanoseconds since 1970, a time outside the
// years 1678 to 2262 clamped to the nearest (Append refuses an event
// dated there; a filter bound there still bounds).
func PackTime(t time.Time) any {
	switch {
	case t.Before(minPackedTime):
		return int64(math.MinInt64)
	case t.After(maxPackedTime):
		return int64(math.MaxInt64)
	}
	return t.UnixNano()
}

// CheckPackedTime refuses a datetime a packed ledger cannot store as it is.
func CheckPackedTime(t time.Time) error {
	if t.Before(minPackedTime) || t.After(maxPackedTime) {
		return fmt.Errorf("datetime %s: outside the years 1678 to 2262 a ledger stores", t.Format(time.RFC3339Nano))
	}
	return nil
}

// detailFlate1 opens a compressed detail: the format byte, then the raw
// DEFLATE stream against detailDictFor's dictionary.
const detailFlate1 = 1

// detailDict is what compression of a detail starts from: the details the
// worker and the operators write most, before the row's values. It is part
// of the stored format: a new dictionary is a new format byte, never an
// edit of this one.
const detailDict = `accepted into the repository by lazaret; ` +
	`stage failed; class  routed to quarantine audit-hold dlq (lazaret/); ` +
	`replayed from  as attempt , task ; discarded from  by ; batch  submitted:  items expected; ` +
	`submitted in batch ; expected in the ingest queue as task `

// detailDictFor appends to dict detailDict followed by the values of row e
// a detail repeats, in the order the submission's detail names them.
func detailDictFor(dict []byte, e *premis.Event) []byte {
	dict = append(dict, detailDict...)
	for _, v := range [...]string{e.Agent, e.ObjectID, e.BatchID, e.TaskID} {
		if len(v) <= maxRowValue {
			dict = append(dict, v...)
		}
	}
	return dict
}

// maxDetail bounds a detail a packed ledger compresses and inflates.
const maxDetail = 64 << 10

// EncodeDetail is how a packed ledger's detail column stores e's detail:
// the text, or bytes (detailFlate1 and the stream) when those are
// shorter. The stored type tells them apart: text is a detail as it is.
func EncodeDetail(e *premis.Event) (any, error) {
	d := e.Detail
	if len(d) < 8 || len(d) > maxDetail {
		return d, nil
	}
	c := recordCoders.get() // as a record's steps are
	defer recordCoders.put(c)
	c.dict = detailDictFor(c.dict[:0], e)
	c.buf.Reset()
	c.buf.WriteByte(detailFlate1)
	c.flate.ResetDict(&c.buf, c.dict)
	defer c.flate.Reset(io.Discard)
	if _, err := io.WriteString(c.flate, d); err != nil {
		return nil, err
	}
	if err := c.flate.Close(); err != nil {
		return nil, err
	}
	if c.buf.Len() >= len(d) {
		return d, nil
	}
	return bytes.Clone(c.buf.Bytes()), nil
}

// DecodeDetail is the detail a packed ledger's stored bytes hold for row
// e, whose other columns are read already.
func DecodeDetail(stored []byte, e *premis.Event) (string, error) {
	if len(stored) < 2 || stored[0] != detailFlate1 {
		return "", errors.New("detail: bytes in a format this build does not read")
	}
	dict := detailDictFor(make([]byte, 0, len(detailDict)+160), e)
	d, err := inflate(stored[1:], dict, maxDetail)
	if err != nil {
		return "", fmt.Errorf("detail: %w", err)
	}
	return string(d), nil
}
