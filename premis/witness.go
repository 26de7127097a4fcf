package premis

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A witness keeps signed checkpoints where the ledger's host cannot
// rewrite them: a directory on another machine or filesystem mounted
// write-once, a bucket with object lock, a repository others pull. A
// checkpoint log beside the ledger proves nothing when the ledger and the
// log are rolled back together (a restored backup of both, a host
// rewritten whole); a witness that holds a later head does. Publishing is
// Lazaret's half: Witness.Publish writes each checkpoint as a new file,
// never replacing one (O_EXCL), and VerifyWitnessed holds the chain to the
// newest. Making the place write-once is the operator's half.
//
// Layout (docs/checkpoints.md): DIR/<ledger>/<time>-<count>.json, where
// <ledger> is the first 16 hex digits of the ledger's first event hash,
// <time> the checkpoint's time as 20060102T150405.000000000Z (so names sort
// by time) and <count> its count of events; the file holds the checkpoint
// as one JSON line, exactly as the checkpoint log does.

// CheckpointReanchored is a checkpoint an operator published to re-anchor a
// witness after the ledger went back in time (lazaret ledger checkpoint
// --reanchor): the witness's checkpoints before it no longer hold the
// chain, and it stays in the witness as the record that this happened.
const CheckpointReanchored CheckpointStatus = "reanchored"

// Witness is a witness directory.
type Witness struct {
	Dir string
}

// witnessTail bounds how many of a witness's newest files Read parses.
const witnessTail = 1024

// witnessTime is the time in a witness file's name.
const witnessTime = "20060102T150405.000000000Z"

// Publish writes c (signed) as a new file of the witness and returns its
// path. A file of that name that exists with the same bytes is success (a
// publish retried); with other bytes it is an error: nothing is replaced.
func (w Witness) Publish(c *Checkpoint) (string, error) {
	if c.Signature == "" {
		return "", errors.New("premis: witness: checkpoint not signed")
	}
	if c.Status == CheckpointFailed || !isHash(c.Ledger) {
		return "", fmt.Errorf("premis: witness: only a checkpoint of a verified head is published (status %q)", c.Status)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	b = append(b, '\n')
	dir := filepath.Join(w.Dir, c.Ledger[:16])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("premis: witness: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.json", c.Time.UTC().Format(witnessTime), c.Count))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, os.ErrExist) {
		if old, rerr := os.ReadFile(path); rerr == nil && bytes.Equal(old, b) {
			return path, nil
		}
		return "", fmt.Errorf("premis: witness: %s exists with other content: nothing is replaced", path)
	}
	if err != nil {
		return "", fmt.Errorf("premis: witness: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("premis: witness %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return path, nil
}

// Witnessed is what a witness holds for one ledger.
type Witnessed struct {
	Dir string
	// Newest is the checkpoint the chain is held to: the one counting the
	// most events among those published since the latest re-anchoring
	// (that one included). Nil when the witness holds none.
	Newest *CheckpointEntry
	// Reanchored is the latest re-anchoring, nil when there was none.
	Reanchored *CheckpointEntry
	// Files is how many checkpoint files the ledger has there.
	Files int
	// Problems are files that are not valid, signed checkpoints of the
	// ledger (each a *CheckpointLineError, line 1): never trusted.
	Problems []error
}

// Read reads the witness's checkpoints of the ledger whose first event has
// hash ledger, checking each signature with pub; its newest witnessTail
// files are parsed. A witness with no folder for the ledger holds nothing.
func (w Witness) Read(ledger string, pub ed25519.PublicKey) (*Witnessed, error) {
	res := &Witnessed{Dir: w.Dir}
	if fi, err := os.Stat(w.Dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("premis: witness %s: not a directory it can read: %v", w.Dir, err)
	}
	if !isHash(ledger) {
		return res, nil
	}
	dir := filepath.Join(w.Dir, ledger[:16])
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return nil, fmt.Errorf("premis: witness: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	res.Files = len(names)
	if len(names) > witnessTail {
		names = names[len(names)-witnessTail:]
	}
	var valid []CheckpointEntry
	for _, name := range names {
		path := filepath.Join(dir, name)
		c, err := readWitnessFile(path, pub)
		if err == nil && c.Ledger != ledger {
			err = fmt.Errorf("a checkpoint of ledger %s, in the folder of %s", c.Ledger, ledger)
		}
		if err != nil {
			res.Problems = append(res.Problems, &CheckpointLineError{Path: path, Line: 1, Err: err})
			continue
		}
		valid = append(valid, CheckpointEntry{Checkpoint: *c, Path: path, Line: 1})
	}
	// From the latest re-anchoring on (by time, as the names sort).
	from := 0
	for i := range valid {
		if valid[i].Status == CheckpointReanchored {
			from = i
			res.Reanchored = &valid[i]
		}
	}
	for i := from; i < len(valid); i++ {
		if e := &valid[i]; res.Newest == nil || e.Count >= res.Newest.Count {
			res.Newest = e
		}
	}
	return res, nil
}

// readWitnessFile reads one published checkpoint: one signed JSON line.
func readWitnessFile(path string, pub ed25519.PublicKey) (*Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCheckpointLine+1))
	switch {
	case err != nil:
		return nil, err
	case len(b) > maxCheckpointLine:
		return nil, ErrCheckpointLong
	case len(b) == 0 || b[len(b)-1] != '\n' || bytes.Count(b, []byte("\n")) != 1:
		return nil, errors.New("not one checkpoint line")
	}
	var c Checkpoint
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("not a checkpoint entry: %v", err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.Status == CheckpointFailed {
		return nil, errors.New("a failed verification: a witness holds heads only")
	}
	if err := c.CheckSignature(pub); err != nil {
		return nil, err
	}
	return &c, nil
}
