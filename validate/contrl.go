package validate

import (
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

// ReadEnvelopeOf is ReadEnvelope for interchange ic of the file at src
// (one of a file of several, see edifact.Interchange.Next), read from its
// first byte to its UNZ; its offsets count from the start of the file.
func ReadEnvelopeOf(src Source, ic *edifact.Interchange) *edifact.Envelope {
	if ic == nil || ic.Start == 0 {
		return ReadEnvelope(src, 0)
	}
	f, size, err := Open(src)
	if err != nil || ic.Start > size {
		return nil
	}
	defer f.Close()
	return edifact.ReadEnvelopeAt(io.NewSectionReader(f, ic.Start, size-ic.Start), ic.Start, edifact.Limits{})
}

// ContrlFor is the CONTRL report for the interchange at src and what
// CheckInterchange returned for it, with every fault in it: Replies with
// ReplyContrl (the partner reads CONTRL only, so a message that failed a
// business rule is rejected by its UCM too).
func (r *InterchangeResult) ContrlFor(env *edifact.Envelope, err error) edifact.ContrlReport {
	rep, _ := r.Replies(env, err, ReplyContrl)
	return rep
}

// ruleFault is how CONTRL and APERAK report a rule failure: at its segment
// (UNH = 1), element and component, with its 0085 code or, when the rule
// names none, 12 (invalid value: a code, location, check digit or mass the
// rule refused) for a value it read and 13 (missing) for one it did not
// find (no element).
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
