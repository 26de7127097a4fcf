package ledgersql

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/flate"

	"github.com/lazaret/lazaret/premis"
)

// The steps column holds the steps a decision's record holds beside its own
// event (premis.Step) in one of two forms, both read by every build since
// the compact one:
//
//   - plain: the steps' JSON array, each step an object whose fields come in
//     Step's order (type first, then outcome). Every row written before the
//     compact form holds this, and so does a row whose compact form would
//     not be shorter.
//   - compact: the heads, the JSON array of each step's type and outcome
//     alone; a newline, which JSON text never holds; stepsFlate1; and the
//     steps' whole JSON array DEFLATE-compressed against stepsDict followed
//     by the record's own digest, PUID and agent (which its steps repeat),
//     base64 without padding. An accepted master's three steps take 136
//     bytes in this form, where their JSON takes 486.
//
// The filters select and count steps by substring (stepNeedles), which
// finds them in either form: each step opens once with stepOpen, followed
// by its type and outcome, and base64 holds neither '{' nor '"'. The chain
// hashes the steps as the event holds them, never their stored form, so
// how they are stored may change without a hash changing.
const stepsFlate1 = 'a'

// stepsDict is what compression of a record's steps starts from: the
// steps of an accepted master as the worker writes them. It is part of the
// stored format: a new dictionary is a new format byte, never an edit of
// this one.
const stepsDict = `[{"type":"fix","outcome":"suc","detail":"SHA-256 of the file compared with the manifest","note":"sha256 "},` +
	`{"type":"for","outcome":"suc","detail":"magic bytes, extension and declared format (PRONOM)","note":"tiff (fmt/353)","puid":"fmt/353"},` +
	`{"type":"val","outcome":"war","outcome":"suc","detail":"TIFF structure of every IFD and pixel data of every page (lazaret/)",` +
	`"note":" page(s),  checked to the pixel data; warnings: ","puid":"fmt/1917"}]`

// stepsB64 is the compact form's base64: standard alphabet, no padding,
// one spelling per byte string.
var stepsB64 = base64.RawStdEncoding.Strict()

// MaxStepsText bounds the steps column of one record, and the JSON its
// compact form inflates to.
const MaxStepsText = 64 << 10

// stepHead is what the compact form keeps of a step in the clear.
type stepHead struct {
	Type    premis.EventType `json:"type"`
	Outcome premis.Outcome   `json:"outcome"`
}

// stepsLevel is klauspost/compress's level for steps: the smallest
// output (30 bytes for an accepted master's steps, against 41 at level 3)
// at 5 µs a record; levels 7 to 9 save nothing more here at twice the time.
const stepsLevel = 6

// recordCoder holds what one encoding against a record's own dictionary
// reuses: a record's steps, and in a packed ledger its detail (see
// EncodeDetail), both at stepsLevel.
type recordCoder struct {
	dict  []byte
	flate *flate.Writer
	buf   bytes.Buffer
}

var recordCoders = newFreeList(func() *recordCoder {
	w, err := flate.NewWriter(io.Discard, stepsLevel) // its dictionary is each record's (ResetDict)
	if err != nil {
		panic(err) // only for a bad level
	}
	return &recordCoder{flate: w}
})

// stepsDictFor appends to dict stepsDict followed by what of record e its
// steps repeat.
func stepsDictFor(dict []byte, e *premis.Event) []byte {
	dict = append(append(dict, stepsDict...), e.Agent...)
	dict = append(append(dict, e.PUID...), "sha256 "...)
	return append(dict, e.SHA256...)
}

// EncodeSteps is how the steps column stores record e's steps: "" for
// none, else the shorter of the plain and the compact form.
func EncodeSteps(e *premis.Event) (string, error) { return encodeSteps(e, false) }

// EncodeStepsPacked is how a packed ledger's steps column (see Pack)
// stores record e's steps: "" for none, else the packed form, always.
//
// The packed form is the compact one with shorter heads: a JSON array of
// each step's [type, outcome] pair (43 bytes for an accepted master's
// three steps, where the compact heads take 93). Its needles
// (stepNeedles) find only this form, so a packed ledger writes no other.
// Each pair holds its quoted type, the three characters "," and its quoted
// outcome; a quote inside a JSON string is escaped, so that sequence
// occurs once a step (stepSep), and ["type", and ,"outcome"] only where a
// pair begins or ends.
func EncodeStepsPacked(e *premis.Event) (string, error) { return encodeSteps(e, true) }

func encodeSteps(e *premis.Event, packed bool) (string, error) {
	if len(e.Steps) == 0 {
		return "", nil
	}
	plain, err := json.Marshal(e.Steps)
	if err != nil {
		return "", err
	}
	if len(plain) > MaxStepsText {
		// DecodeSteps would refuse it: a row no read could give back.
		return "", fmt.Errorf("steps: %d bytes of JSON, more than %d", len(plain), MaxStepsText)
	}
	var heads []byte
	if packed {
		heads, err = json.Marshal(pairsOf(e.Steps))
	} else {
		heads, err = json.Marshal(headsOf(e.Steps))
	}
	if err != nil {
		return "", err
	}
	c := recordCoders.get()
	defer recordCoders.put(c)
	c.buf.Reset()
	c.dict = stepsDictFor(c.dict[:0], e)
	c.flate.ResetDict(&c.buf, c.dict)
	if _, err := c.flate.Write(plain); err != nil {
		return "", err
	}
	if err := c.flate.Close(); err != nil {
		return "", err
	}
	n := len(heads) + 2 + stepsB64.EncodedLen(c.buf.Len())
	switch {
	case packed && n > MaxStepsText:
		return "", fmt.Errorf("steps: %d bytes packed, more than %d", n, MaxStepsText)
	case !packed && n >= len(plain):
		return string(plain), nil
	}
	var b strings.Builder
	b.Grow(n)
	b.Write(heads)
	b.WriteByte('\n')
	b.WriteByte(stepsFlate1)
	enc := make([]byte, stepsB64.EncodedLen(c.buf.Len()))
	stepsB64.Encode(enc, c.buf.Bytes())
	b.Write(enc)
	return b.String(), nil
}

// pairsOf is the packed form's heads of steps.
func pairsOf(steps []premis.Step) [][2]string {
	ps := make([][2]string, len(steps))
	for i, s := range steps {
		ps[i] = [2]string{string(s.Type), string(s.Outcome)}
	}
	return ps
}

func headsOf(steps []premis.Step) []stepHead {
	hs := make([]stepHead, len(steps))
	for i, s := range steps {
		hs[i] = stepHead{s.Type, s.Outcome}
	}
	return hs
}

// DecodeSteps reads what EncodeSteps wrote for record e (its other columns
// read already). The text must be as the ledger writes it: a filter
// searches the text and the chain hashes the steps, so text changed past
// the ledger must not read as steps the filters would not find. In the
// compact form that means heads that are exactly those of the steps it
// holds, which hold as many as the plain form allows.
func DecodeSteps(s string, e *premis.Event) ([]premis.Step, error) { return decodeSteps(s, e, false) }

// DecodeStepsPacked reads what EncodeStepsPacked wrote for record e, as
// exactly: the packed form alone, its pairs those of the steps it holds.
func DecodeStepsPacked(s string, e *premis.Event) ([]premis.Step, error) {
	return decodeSteps(s, e, true)
}

func decodeSteps(s string, e *premis.Event, packed bool) ([]premis.Step, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > MaxStepsText {
		return nil, fmt.Errorf("steps: %d bytes, more than %d", len(s), MaxStepsText)
	}
	heads, body, compact := strings.Cut(s, "\n")
	if packed && !compact {
		return nil, errors.New("steps: not in the packed form (the text was changed past the ledger)")
	}
	plain := []byte(s)
	if compact {
		var err error
		if plain, err = inflateSteps(body, e); err != nil {
			return nil, err
		}
	}
	var steps []premis.Step
	if err := json.Unmarshal(plain, &steps); err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	if len(steps) == 0 || len(steps) > premis.MaxSteps {
		return nil, fmt.Errorf("steps: %d entries, want 1 to %d", len(steps), premis.MaxSteps)
	}
	if again, err := json.Marshal(steps); err != nil || !bytes.Equal(again, plain) {
		return nil, errors.New("steps: not written as the ledger writes them (the text was changed past the ledger)")
	}
	if compact {
		var again []byte
		var err error
		if packed {
			again, err = json.Marshal(pairsOf(steps))
		} else {
			again, err = json.Marshal(headsOf(steps))
		}
		if err != nil || string(again) != heads {
			return nil, errors.New("steps: the types and outcomes in the clear are not those of the steps held (the text was changed past the ledger)")
		}
	}
	return steps, nil
}

// inflateSteps is the steps' JSON a compact form's body holds.
func inflateSteps(body string, e *premis.Event) ([]byte, error) {
	if body == "" || body[0] != stepsFlate1 {
		return nil, errors.New("steps: compact in a format this build does not read")
	}
	if strings.ContainsAny(body, "\r\n") {
		// base64 skips line breaks, so they would hide in the text.
		return nil, errors.New("steps: a line break in the compact form (the text was changed past the ledger)")
	}
	z, err := stepsB64.DecodeString(body[1:])
	if err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	dict := stepsDictFor(make([]byte, 0, len(stepsDict)+len(e.Agent)+len(e.PUID)+len(e.SHA256)+8), e)
	plain, err := inflate(z, dict, MaxStepsText)
	if err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	return plain, nil
}
