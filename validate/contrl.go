package validate

import (
	"context"
	"errors"
	"io"

	"github.com/lazaret/lazaret/edifact"
)

// ReadEnvelope reads again the service segments of the interchange at src
// (edifact.ReadEnvelope: UNB whole, groups, every S009 and count as sent),
// for the CONTRL that answers it. max bounds the bytes read (0: the whole
// file), so that a caller that only needs UNB (its acknowledgement request)
// reads its first bytes. nil when the file cannot be opened.
func ReadEnvelope(src Source, max int64) *edifact.Envelope {
	f, size, err := Open(src)
	if err != nil {
		return nil
	}
	defer f.Close()
	if max > 0 && max < size {
		size = max
	}
	return edifact.ReadEnvelope(io.LimitReader(f, size), edifact.Limits{})
}

// ContrlFor is the CONTRL report for the interchange at src and what
// CheckInterchange returned for it: Contrl(err) with the envelope as sent
// (env, from ReadEnvelope; nil keeps what the parse kept) and, when the
// envelope was accepted, a UCM rejection for every message that failed a
// rule: such a message is parked, never accepted, and the report must not
// acknowledge it.
func (r *InterchangeResult) ContrlFor(env *edifact.Envelope, err error) edifact.ContrlReport {
	rep := r.Contrl(err)
	rep.Envelope = env
	var ue *edifact.UnsupportedError
	if rep.Err == nil && errors.As(err, &ue) {
		// A syntax identifier Lazaret does not support (UNB S001 0001): the
		// syntax level is not supported, UNSL 0085 code 2.
		rep.Err = &edifact.SyntaxError{Offset: ue.Offset, Index: 1, Tag: "UNB", Element: 1, Component: 1, Code: edifact.CodeSyntaxVersion, Err: ue}
	}
	if err != nil {
		return rep
	}
	if r.Failed == 0 || !r.sound {
		return rep
	}
	// The failed messages' verdicts, as the routing sees them (a second
	// read when they were not kept), up to maxContrlFaults messages: a
	// CONTRL stays a bounded report however many messages were parked.
	_ = r.EachMessage(context.Background(), func(m MessageResult) error {
		fs := MessageFaults(m.Err)
		if len(fs) == 0 {
			return nil
		}
		if rep.Faults == nil {
			rep.Faults = map[int][]*edifact.SyntaxError{}
		}
		rep.Faults[m.Number] = fs
		// Its UCM needs its header; WriteCONTRL takes the S009 as sent
		// from the envelope.
		hdr := edifact.Message{Ref: m.Ref, Type: m.Type, Number: m.Number, Offset: m.Offset}
		if h := env.Message(m.Number); h != nil && h.Ref == m.Ref && len(h.ID) >= 4 {
			hdr.Version, hdr.Release, hdr.Agency = h.ID[1], h.ID[2], h.ID[3]
		}
		rep.Messages = append(rep.Messages, hdr)
		if len(rep.Faults) >= maxContrlFaults {
			return errContrlFull
		}
		return nil
	})
	return rep
}

// maxContrlFaults bounds the parked messages one CONTRL rejects by UCM.
const maxContrlFaults = 10000

var errContrlFull = errors.New("validate: CONTRL fault list full")

// MessageFaults is how CONTRL reports a message's rule failures: every
// *RuleError in err (a join of them, as CheckMessage returns), each at its
// segment (UNH = 1), element and component, with its 0085 code or, when the
// rule names none, 12 (invalid value: a code, location, check digit or
// mass the rule refused) for a value it read and 13 (missing) for one it did
// not find (no element).
func MessageFaults(err error) []*edifact.SyntaxError {
	var out []*edifact.SyntaxError
	var walk func(error)
	walk = func(err error) {
		var re *RuleError
		switch x := err.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		default:
			if errors.As(err, &re) {
				out = append(out, ruleFault(re))
			}
		}
	}
	walk(err)
	return out
}

func ruleFault(re *RuleError) *edifact.SyntaxError {
	code := re.Syntax
	if code == 0 {
		code = edifact.CodeInvalidValue
		if re.Element == 0 {
			code = edifact.CodeMissing
		}
	}
	seg := re.Segment
	if seg == 0 {
		seg = 1
	}
	return &edifact.SyntaxError{Offset: re.Offset, Segment: seg, Tag: re.Tag, Element: re.Element, Component: re.Component,
		Code: code, Message: re.Message, Err: errors.New(re.Reason)}
}
