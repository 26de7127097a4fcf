package premis

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Checkpoints. The chain proves that rows fit together, not that rows
// are missing or that nobody recomputed it: whoever can write the database
// can cut its newest rows and move the head back, wipe it, or rewrite an
// event and every hash after it. A checkpoint is the ledger's head signed
// with an ed25519 key and written outside the database, to a log the
// database's writer cannot rewrite (the model: Certificate Transparency's
// signed tree heads). VerifyCheckpointed holds the chain to the newest:
// fewer events than it counts, another hash at its count or another first
// event is a problem.
//
// The log is a file of JSON lines, CheckpointFile in a directory of the
// operator's choosing, appended to with O_APPEND and one write a line, so
// that every process that appends to the ledger (workers on one machine,
// serve) can write to it at once without mixing their lines. Object stores
// and other machines' logs are not written to (yet): copy or ship the file.

// CheckpointFile is the checkpoint log's file name in its directory.
const CheckpointFile = "checkpoints.jsonl"

// checkpointDomain opens every signed message.
const checkpointDomain = "lazaret/premis-checkpoint/1"

// CheckpointStatus is what a checkpoint records.
type CheckpointStatus string

const (
	// CheckpointHead is a head an appending process saw, once it had
	// checked the chain from its last checkpoint to it (Verifier).
	CheckpointHead CheckpointStatus = "head"
	// CheckpointVerified is a head a full verification (lazaret ledger
	// verify) found the ledger intact at.
	CheckpointVerified CheckpointStatus = "verified"
	// CheckpointFailed records that a verification found the ledger not
	// intact: Problem is the first problem, Count and Hash where the chain
	// was read to. It is never an anchor.
	CheckpointFailed CheckpointStatus = "failed"
)

// CheckpointStatuses lists every checkpoint status.
func CheckpointStatuses() []CheckpointStatus {
	return []CheckpointStatus{CheckpointHead, CheckpointVerified, CheckpointFailed, CheckpointReanchored}
}

// Checkpoint is one line of the checkpoint log: a ledger's head, signed.
type Checkpoint struct {
	// Ledger identifies the ledger: the hash of its first event, which
	// every later hash depends on (the ledgers keep no other identity).
	Ledger    string           `json:"ledger"`
	Status    CheckpointStatus `json:"status"`
	Count     int64            `json:"count"` // events on the chain
	Seq       int64            `json:"seq"`   // the seq of the Count-th event, where an incremental check starts
	Hash      string           `json:"hash"`  // the hash of the Count-th event
	Time      time.Time        `json:"time"`
	Problem   string           `json:"problem,omitempty"`
	Signature string           `json:"sig"` // base64 ed25519 signature of the fields above (see Sign)
}

// maxProblem bounds the problem a failed checkpoint carries.
const maxProblem = 1000

// message is what is signed: the domain, then every field as a
// length-prefixed text or a big-endian integer, in the order of the
// struct; the time as UTC RFC 3339 with nanoseconds.
func (c *Checkpoint) message() []byte {
	var b bytes.Buffer
	b.WriteString(checkpointDomain)
	b.WriteByte(0)
	text := func(s string) {
		b.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
		b.WriteString(s)
	}
	num := func(n int64) { b.Write(binary.BigEndian.AppendUint64(nil, uint64(n))) }
	text(c.Ledger)
	text(string(c.Status))
	num(c.Count)
	num(c.Seq)
	text(c.Hash)
	text(c.Time.UTC().Format(time.RFC3339Nano))
	text(c.Problem)
	return b.Bytes()
}

// Sign sets c's signature with key.
func (c *Checkpoint) Sign(key ed25519.PrivateKey) {
	c.Time = c.Time.UTC()
	if len(c.Problem) > maxProblem {
		c.Problem = c.Problem[:maxProblem]
	}
	c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, c.message()))
}

// Checkpoint errors, each of one line of a log (CheckpointLineError).
var (
	// ErrCheckpointSignature: the line's signature does not verify with the
	// public key: it was forged or changed, or signed with another key.
	ErrCheckpointSignature = errors.New("signature does not verify with the checkpoint public key: the entry was forged or changed, or signed with another key")
	// ErrCheckpointCut: the last line has no newline: a write was cut short.
	ErrCheckpointCut = errors.New("the line ends without a newline: a write was cut short")
	// ErrCheckpointLong: the line is longer than any entry is.
	ErrCheckpointLong = errors.New("the line is longer than a checkpoint entry can be")
)

// CheckSignature reports whether c is signed by pub's key.
func (c *Checkpoint) CheckSignature(pub ed25519.PublicKey) error {
	sig, err := base64.StdEncoding.DecodeString(c.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize || len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, c.message(), sig) {
		return ErrCheckpointSignature
	}
	return nil
}

// validate checks the fields a signed entry must have.
func (c *Checkpoint) validate() error {
	switch {
	case c.Status != CheckpointHead && c.Status != CheckpointVerified && c.Status != CheckpointFailed && c.Status != CheckpointReanchored:
		return fmt.Errorf("status %q: want one of %v", c.Status, CheckpointStatuses())
	case c.Count < 0 || c.Seq < 0:
		return fmt.Errorf("count %d, seq %d: want numbers of events", c.Count, c.Seq)
	case c.Count > 0 && c.Status != CheckpointFailed && (!isHash(c.Hash) || !isHash(c.Ledger)):
		// A failed check may not know the ledger's first event.
		return fmt.Errorf("hash %q, ledger %q: want 64 hex digits", c.Hash, c.Ledger)
	case c.Time.IsZero():
		return errors.New("no time")
	}
	return nil
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// CheckpointLineError is a line of a checkpoint log that is not a valid,
// signed entry. Line is 1-based.
type CheckpointLineError struct {
	Path string
	Line int
	Err  error
}

func (e *CheckpointLineError) Error() string {
	return fmt.Sprintf("checkpoint log %s line %d: %v", e.Path, e.Line, e.Err)
}

func (e *CheckpointLineError) Unwrap() error { return e.Err }

// CheckpointEntry is a valid, signed line of a log and where it stands.
type CheckpointEntry struct {
	Checkpoint
	Path string
	Line int // 1-based
}

// what names the entry in a problem.
func (e *CheckpointEntry) what() string {
	if filepath.Base(e.Path) != CheckpointFile {
		return fmt.Sprintf("the checkpoint of %s published to the witness (%s)", e.Time.UTC().Format(time.RFC3339), e.Path)
	}
	return fmt.Sprintf("the signed checkpoint of %s (line %d of %s)", e.Time.UTC().Format(time.RFC3339), e.Line, e.Path)
}

// Checkpoints is what CheckpointLog.Read found: the valid entries of the
// log's last CheckpointTail lines and the lines that are not.
type Checkpoints struct {
	Path     string
	Lines    int               // lines in the log
	Entries  []CheckpointEntry // in log order
	Problems []error           // each a *CheckpointLineError
}

// Newest is the entry that counts the most events and is an anchor (head
// or verified); the later line when two count as many. Nil when none.
func (c *Checkpoints) Newest() *CheckpointEntry {
	var n *CheckpointEntry
	if c == nil {
		return nil
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.Status != CheckpointFailed && e.Count > 0 && (n == nil || e.Count >= n.Count) {
			n = e
		}
	}
	return n
}

// LastVerification is the latest (by time) entry written by a
// verification (verified or failed). Nil when none.
func (c *Checkpoints) LastVerification() *CheckpointEntry {
	var n *CheckpointEntry
	if c == nil {
		return nil
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.Status != CheckpointHead && (n == nil || !e.Time.Before(n.Time)) {
			n = e
		}
	}
	return n
}

// CheckpointLog is a checkpoint log: CheckpointFile in Dir.
type CheckpointLog struct {
	Dir string
}

// Path is the log's file.
func (l CheckpointLog) Path() string { return filepath.Join(l.Dir, CheckpointFile) }

// maxCheckpointLine bounds a line of the log; entries are a few hundred
// bytes.
const maxCheckpointLine = 4096

// CheckpointTail is how many of its last lines Read parses: the newest
// entry is among them unless more than that many were written since,
// which would take as many writers racing. Earlier lines are counted, not
// read.
const CheckpointTail = 256

// Append writes c, signed, as one line: opened with O_APPEND and written
// with one write, then synced, so that processes appending at once never
// interleave within a line. The directory is created (0700) if missing.
func (l CheckpointLog) Append(c *Checkpoint) error {
	if c.Signature == "" {
		return errors.New("premis: checkpoint not signed")
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if len(b) > maxCheckpointLine {
		return fmt.Errorf("premis: checkpoint entry of %d bytes: longer than %d", len(b), maxCheckpointLine)
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return fmt.Errorf("premis: checkpoint log: %w", err)
	}
	f, err := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("premis: checkpoint log: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("premis: checkpoint log %s: %w", l.Path(), err)
	}
	return nil
}

// Read reads the log's last CheckpointTail lines, checking each entry's
// signature with pub. A line that does not parse, is cut short or does not
// verify is in Problems, named by its line, and not trusted; it never
// stops the read. A log that does not exist is empty. The error is for a
// log that cannot be read at all.
func (l CheckpointLog) Read(pub ed25519.PublicKey) (*Checkpoints, error) {
	cps := &Checkpoints{Path: l.Path()}
	f, err := os.Open(l.Path())
	if errors.Is(err, os.ErrNotExist) {
		return cps, nil
	}
	if err != nil {
		return nil, fmt.Errorf("premis: checkpoint log: %w", err)
	}
	defer f.Close()
	return cps, readCheckpoints(f, pub, cps)
}

// ReadCheckpoints is CheckpointLog.Read over r; path names it in errors.
func ReadCheckpoints(r io.Reader, path string, pub ed25519.PublicKey) (*Checkpoints, error) {
	cps := &Checkpoints{Path: path}
	return cps, readCheckpoints(r, pub, cps)
}

func readCheckpoints(r io.Reader, pub ed25519.PublicKey, cps *Checkpoints) error {
	type line struct {
		n    int
		text []byte
		err  error
	}
	var tail []line
	keep := func(l line) {
		if len(tail) == CheckpointTail {
			tail = append(tail[:0], tail[1:]...)
		}
		tail = append(tail, l)
	}
	br := bufio.NewReaderSize(r, maxCheckpointLine)
	for {
		b, err := br.ReadSlice('\n')
		if len(b) == 0 && errors.Is(err, io.EOF) {
			break
		}
		cps.Lines++
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("premis: checkpoint log %s: %w", cps.Path, err)
			}
			keep(line{n: cps.Lines, err: ErrCheckpointLong})
		case errors.Is(err, io.EOF):
			keep(line{n: cps.Lines, err: ErrCheckpointCut})
		case err != nil:
			return fmt.Errorf("premis: checkpoint log %s: %w", cps.Path, err)
		default:
			keep(line{n: cps.Lines, text: bytes.Clone(b)})
		}
		if err != nil {
			break
		}
	}
	for _, l := range tail {
		if l.err == nil {
			var c Checkpoint
			dec := json.NewDecoder(bytes.NewReader(l.text))
			dec.DisallowUnknownFields()
			switch err := dec.Decode(&c); {
			case err != nil:
				l.err = fmt.Errorf("not a checkpoint entry: %v", err)
			case c.validate() != nil:
				l.err = c.validate()
			default:
				l.err = c.CheckSignature(pub)
			}
			if l.err == nil {
				cps.Entries = append(cps.Entries, CheckpointEntry{Checkpoint: c, Path: cps.Path, Line: l.n})
				continue
			}
		}
		cps.Problems = append(cps.Problems, &CheckpointLineError{Path: cps.Path, Line: l.n, Err: l.err})
	}
	return nil
}

// GenerateCheckpointKey returns a new ed25519 signing key.
func GenerateCheckpointKey() (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	return key, err
}

// MarshalCheckpointKey is key as a PEM "PRIVATE KEY" block (PKCS #8), as
// openssl writes ed25519 keys.
func MarshalCheckpointKey(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseCheckpointKey reads a key MarshalCheckpointKey wrote.
func ParseCheckpointKey(b []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, errors.New("premis: checkpoint key: want a PEM PRIVATE KEY block (lazaret ledger keygen)")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("premis: checkpoint key: %w", err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("premis: checkpoint key: a %T, want ed25519", k)
	}
	return key, nil
}

// EncodeCheckpointPublicKey is pub as ParseCheckpointPublicKey reads it:
// the 32 bytes in standard base64.
func EncodeCheckpointPublicKey(pub ed25519.PublicKey) string {
	return base64.StdEncoding.EncodeToString(pub)
}

// ParseCheckpointPublicKey reads a public key: base64 of its 32 bytes (as
// lazaret ledger keygen prints it), or a PEM "PUBLIC KEY" block.
func ParseCheckpointPublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if blk, _ := pem.Decode([]byte(s)); blk != nil {
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("premis: checkpoint public key: %w", err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("premis: checkpoint public key: a %T, want ed25519", k)
		}
		return pub, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("premis: checkpoint public key: want the base64 of 32 bytes (as lazaret ledger keygen prints it) or a PEM PUBLIC KEY")
	}
	return ed25519.PublicKey(b), nil
}
