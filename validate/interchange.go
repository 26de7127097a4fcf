package validate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lazaret/lazaret/edifact"
)

// MessageResult is the verdict on one message of an interchange.
type MessageResult struct {
	Ref, Type string
	Number    int   // 1-based in the interchange
	Offset    int64 // of UNH
	Warnings  []Warning
	Err       error // joined *RuleError, semantic or regulatory; nil when it passes
}

// InterchangeResult is what CheckInterchange found.
type InterchangeResult struct {
	Interchange *edifact.Interchange
	Messages    []MessageResult
	// Seen lists every message read, for CONTRL.
	Seen []edifact.Message
}

// Contrl builds the CONTRL report for a rejected (or accepted) interchange
// from the error CheckInterchange returned.
func (r *InterchangeResult) Contrl(err error) edifact.ContrlReport {
	rep := edifact.ContrlReport{Interchange: r.Interchange, Messages: r.Seen}
	if r.Interchange != nil && r.Interchange.Open != nil {
		rep.Messages = append(rep.Messages, *r.Interchange.Open) // the message the error stopped in
	}
	var se *edifact.SyntaxError
	var re *RuleError
	switch {
	case errors.As(err, &se):
		rep.Err = se
	case errors.As(err, &re):
		code := re.Syntax
		if code == 0 {
			code = edifact.CodeUnspecified
		}
		rep.Err = &edifact.SyntaxError{Offset: re.Offset, Segment: re.Segment, Tag: re.Tag, Element: re.Element, Component: re.Component,
			Code: code, Message: re.Message, Err: errors.New(re.Reason)}
		if rep.Err.Segment == 0 {
			rep.Err.Segment = 1
		}
	}
	return rep
}

// CheckInterchange validates the UN/EDIFACT interchange at path: SHA-256
// while it parses (fixity against item when given), the envelope and its
// control counts, then every message through the structural, semantic and
// regulatory rules. An interchange-level failure (I/O, fixity, a syntax
// error, a structural rule such as a missing BGM, an unsupported syntax) is
// the returned error, wrapped in a *StageError; message-level failures are
// in the result, one per message. only, when not empty, restricts the
// message checks to the message with that reference (a replay).
func CheckInterchange(ctx context.Context, path string, item *Item, regs *Registries, rules EDIRules, only string) (*Report, *InterchangeResult, error) {
	return CheckInterchangeSource(ctx, Source{Path: path}, item, regs, rules, only)
}

// CheckInterchangeSource is CheckInterchange for a file opened through
// Open: beneath its root, no links, no FIFOs, never read past the size
// seen at open.
func CheckInterchangeSource(ctx context.Context, src Source, item *Item, regs *Registries, rules EDIRules, only string) (*Report, *InterchangeResult, error) {
	path := src.String()
	rep := &Report{Path: path, Format: "UN/EDIFACT"}
	res := &InterchangeResult{}
	if err := ctx.Err(); err != nil {
		return rep, res, context.Cause(ctx)
	}
	f, size, err := Open(src)
	if err != nil {
		return rep, res, &StageError{StageOpen, err}
	}
	defer f.Close()
	rep.Size = size
	h := sha256.New()
	counted := &countingReader{r: io.LimitReader(f, size)}
	tee := &ctxReader{ctx: ctx, r: io.TeeReader(counted, h)}
	var structural error
	budget := rules.MaxRetainedBytes
	if budget <= 0 {
		budget = DefaultMaxRetainedBytes
	}
	var retained int64
	ic, perr := edifact.Parse(tee, edifact.Limits{}, func(m *edifact.Message) error {
		// What is kept of every message until the envelope's verdict is
		// known: copies, so that no kept string pins a message's bytes.
		ref, typ := strings.Clone(m.Ref), strings.Clone(m.Type)
		res.Seen = append(res.Seen, edifact.Message{Ref: ref, Type: typ, Version: strings.Clone(m.Version), Release: strings.Clone(m.Release),
			Agency: strings.Clone(m.Agency), Offset: m.Offset, Number: m.Number})
		retained += seenCost + int64(len(m.Ref)+len(m.Type)+len(m.Version)+len(m.Release)+len(m.Agency))
		if only != "" && m.Ref != only {
			return retainedCheck(retained, budget, m)
		}
		warns, err := CheckMessage(m, regs, rules)
		var re *RuleError
		if errors.As(err, &re) && re.Tier == TierStructural && structural == nil {
			structural = err
		}
		res.Messages = append(res.Messages, MessageResult{Ref: ref, Type: typ, Number: m.Number, Offset: m.Offset, Warnings: warns, Err: err})
		retained += resultCost
		for _, w := range warns {
			retained += warningCost + int64(len(w.Code)+len(w.Message))
		}
		if err != nil {
			retained += errorCost
		}
		if err := retainedCheck(retained, budget, m); err != nil {
			return err
		}
		return nil
	})
	res.Interchange = ic
	if tee.err != nil {
		return rep, res, tee.err // the context ended or the storage failed: not a verdict on the data
	}
	// Hash what is left after the parser stopped (an early syntax error).
	if _, err := io.Copy(h, counted); err != nil {
		return rep, res, &StageError{StageFixity, err}
	}
	var one [1]byte
	if n, _ := f.ReadAt(one[:], size); counted.n != size || n > 0 {
		return rep, res, &StageError{StageOpen, fmt.Errorf("%s changed while it was read: %d bytes at open, %d read, more after: %v: %w", path, size, counted.n, n > 0, ErrFileChanged)}
	}
	rep.SHA256 = hex.EncodeToString(h.Sum(nil))
	if item != nil {
		if item.SHA256 != "" && !strings.EqualFold(item.SHA256, rep.SHA256) {
			return rep, res, &StageError{StageFixity, &FixityError{Field: "sha256", Want: item.SHA256, Have: rep.SHA256}}
		}
		if item.Size > 0 && item.Size != rep.Size {
			return rep, res, &StageError{StageFixity, &FixityError{Field: "size", Want: fmt.Sprint(item.Size), Have: fmt.Sprint(rep.Size)}}
		}
	}
	var se *edifact.SyntaxError
	var ue *edifact.UnsupportedError
	switch {
	case errors.As(perr, &se):
		return rep, res, &StageError{StageStructure, perr}
	case errors.As(perr, &ue):
		return rep, res, &StageError{StageFormat, perr}
	case perr != nil:
		return rep, res, &StageError{StageOpen, perr}
	case structural != nil:
		return rep, res, &StageError{StageStructure, structural}
	}
	if only != "" && len(res.Messages) == 0 {
		return rep, res, &StageError{StageRules, &RuleError{Tier: TierSemantic, Code: "edifact.message.gone", Message: only,
			Reason: fmt.Sprintf("message %s is no longer in the interchange", only)}}
	}
	rep.Pages = len(res.Messages)
	for _, m := range res.Messages {
		rep.Warnings = append(rep.Warnings, m.Warnings...)
	}
	return rep, res, nil
}

// DefaultMaxRetainedBytes is what CheckInterchange may keep of all the
// messages of one interchange (their headers and verdicts, until the
// envelope's verdict is known) when EDIRules.MaxRetainedBytes is 0: about
// 250,000 messages.
const DefaultMaxRetainedBytes = 128 << 20

// What one message costs while it is kept: the struct twice (a growing
// slice holds up to twice what it uses), and an error's chain.
const (
	seenCost    = 2 * 168
	resultCost  = 2 * 88
	warningCost = 2 * 48
	errorCost   = 512
)

// retainedCheck refuses an interchange whose kept messages are over
// budget: semantic (quarantined; an operator may raise the budget and
// replay), at the UNH of the message that crossed it.
func retainedCheck(retained, budget int64, m *edifact.Message) error {
	if retained <= budget {
		return nil
	}
	return &RuleError{Tier: TierSemantic, Code: "limit.interchange-memory", Message: m.Ref, Segment: 1, Tag: "UNH", Offset: m.Offset,
		Reason: fmt.Sprintf("message %d: the verdicts kept for the messages so far pass the budget of %d bytes (edi max_retained_bytes)", m.Number, budget)}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ctxReader stops reading when the context ends and keeps the first
// non-EOF read error, so a storage failure is never mistaken for a
// truncated interchange.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		c.err = context.Cause(c.ctx)
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && c.err == nil {
		c.err = err
	}
	return n, err
}
