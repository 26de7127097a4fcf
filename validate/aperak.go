package validate

import (
	"context"
	"errors"
	"strconv"

	"github.com/lazaret/lazaret/edifact"
)

// ReplyMode is which replies a partner gets, and which faults each carries.
type ReplyMode string

const (
	// ReplyBoth (the default): CONTRL for syntax and envelope faults (the
	// message directory's findings, a missing BGM, characters outside the
	// repertoire, broken envelopes), APERAK for business-rule and registry
	// rejections of a message (ContentRule).
	ReplyBoth ReplyMode = "both"
	// ReplyContrl: CONTRL only; a business-rule rejection is a UCM with
	// action 4 there too (UCS/UCD with 0085 code 12 or 13), as Lazaret
	// answered before it wrote APERAK.
	ReplyContrl ReplyMode = "contrl"
	// ReplyAperak: APERAK only, for every rejected message and every fault
	// of it (a syntax fault with its 0085 code as the 9321 code); an
	// interchange rejected whole (its envelope) gets no reply.
	ReplyAperak ReplyMode = "aperak"
)

// ReplyModes lists the reply modes.
func ReplyModes() []ReplyMode { return []ReplyMode{ReplyBoth, ReplyContrl, ReplyAperak} }

// Valid reports whether m is a reply mode ("" is ReplyBoth).
func (m ReplyMode) Valid() bool {
	return m == "" || m == ReplyBoth || m == ReplyContrl || m == ReplyAperak
}

// Contrl reports whether m sends CONTRL.
func (m ReplyMode) Contrl() bool { return m != ReplyAperak }

// Aperak reports whether m sends APERAK.
func (m ReplyMode) Aperak() bool { return m != ReplyContrl }

// The application error codes (9321) of Lazaret's APERAK, by rule code.
// UN/EDIFACT publishes no values for 9321 (user or association defined,
// an..8; the directory holds no code list for it): ERC qualifies them
// with agency ZZZ, mutually defined. Each names what failed, so that a
// partner's translator can route it without reading the text; a rule
// without its own code gets the 0085 code its failure would have in
// CONTRL (12 invalid value, 13 missing), and so does a syntax fault
// reported by APERAK (ReplyAperak).
var aperakCodes = map[string]string{
	"edifact.locode.unknown":        "LOCUNK",  // UN/LOCODE not in the registry
	"edifact.locode.malformed":      "LOCBAD",  // not a UN/LOCODE (country + 3 of A-Z, 2-9)
	"edifact.locode.missing":        "LOCMISS", // LOC declares a UN/LOCODE and carries none
	"edifact.container.check-digit": "CNTRCHK", // ISO 6346 check digit (or owner, category, serial) wrong
	"edifact.vgm.missing":           "VGMMISS", // no verified gross mass (SOLAS VI/2)
	"edifact.vgm.implausible":       "VGMBAD",  // VGM outside the plausible range
	"edifact.vgm.invalid":           "VGMBAD",  // VGM not a mass
	"edifact.hs.unknown":            "HSUNK",   // HS code not in the active tariff registry
	"edifact.hs.malformed":          "HSBAD",   // HS code not 2-10 digits
	"edifact.party.missing":         "PTYMISS", // a party role the message type requires is absent
	"edifact.nad.qualifier-missing": "PTYQUAL", // NAD without party function qualifier (3035)
	"edifact.dtm.invalid":           "DTMBAD",  // date does not match its format qualifier
}

// AperakCodes is the mapping from rule codes to APERAK application error
// codes (9321), for documentation and tests.
func AperakCodes() map[string]string {
	out := make(map[string]string, len(aperakCodes))
	for k, v := range aperakCodes {
		out[k] = v
	}
	return out
}

// ContentRule reports whether the rule with that code judges a message's
// content (a business rule or a registry) rather than its syntax: its
// rejection is answered by APERAK, not CONTRL.
func ContentRule(code string) bool {
	_, ok := aperakCodes[code]
	return ok
}

// AperakCode is the application error code (9321) for a rule failure.
func AperakCode(re *RuleError) string {
	if c, ok := aperakCodes[re.Code]; ok {
		return c
	}
	return strconv.Itoa(ruleFault(re).Code)
}

// maxReplyMessages bounds the parked messages one CONTRL or APERAK
// answers: a reply stays a bounded report however many were parked. A
// CONTRL that cannot name every message it rejects rejects the
// interchange (ContrlReport.Unlisted).
const maxReplyMessages = 10000

var errRepliesFull = errors.New("validate: reply fault list full")

// Replies are the CONTRL and the APERAK that answer the interchange r
// checked, from what CheckInterchange returned for it (err) and the
// envelope as sent (env, from ReadEnvelope; nil keeps what the parse
// kept), as mode splits the faults: the CONTRL is Contrl(err) (every syntax and envelope
// fault) and, when the envelope was accepted, a UCM rejection for every
// message parked for its syntax (and, with ReplyContrl, for its content),
// up to maxReplyMessages, past which it rejects the interchange (Unlisted);
// the APERAK names every message parked for its content (and, with
// ReplyAperak, for its syntax too), each fault with its 9321 code and
// position. A message is parked, never accepted: no reply may say it is.
// A reply the mode does not send is still built; the caller decides what
// to write.
//
// Of a file of several interchanges, Replies answers the first when they
// were all accepted, and the one at fault otherwise; RepliesTo answers
// any.
func (r *InterchangeResult) Replies(env *edifact.Envelope, err error, mode ReplyMode) (edifact.ContrlReport, edifact.AperakReport) {
	return r.RepliesTo(nil, env, err, mode)
}

// RepliesTo is Replies for interchange ic of the file (one of
// r.Interchange.All(); nil: the one Replies answers), env its envelope
// (ReadEnvelopeOf): its own CONTRL and APERAK, naming only its messages.
func (r *InterchangeResult) RepliesTo(ic *edifact.Interchange, env *edifact.Envelope, err error, mode ReplyMode) (edifact.ContrlReport, edifact.AperakReport) {
	rep := r.Contrl(err)
	if ic != nil {
		rep.Interchange = ic
	}
	rep.Envelope = env
	ap := edifact.AperakReport{Interchange: rep.Interchange, Envelope: env}
	number := 1
	if rep.Interchange != nil {
		number = rep.Interchange.Number
	}
	var ue *edifact.UnsupportedError
	if rep.Err == nil && errors.As(err, &ue) {
		// A syntax identifier Lazaret does not support (UNB S001 0001): the
		// syntax level is not supported, UNSL 0085 code 2.
		rep.Err = &edifact.SyntaxError{Offset: ue.Offset, Index: 1, Tag: "UNB", Element: 1, Component: 1, Code: edifact.CodeSyntaxVersion, Err: ue}
	}
	if err != nil || r.Failed == 0 || !r.sound {
		return rep, ap
	}
	// The failed messages' verdicts, as the routing sees them (a second
	// read when they were not kept), up to maxReplyMessages messages.
	_ = r.EachMessage(context.Background(), func(m MessageResult) error {
		if m.Interchange != number {
			return nil // another interchange's: its own replies name it
		}
		var syntax, content []*RuleError
		for _, re := range ruleErrors(m.Err) {
			switch {
			case mode == ReplyContrl:
				syntax = append(syntax, re)
			case mode == ReplyAperak || ContentRule(re.Code):
				content = append(content, re)
			default:
				syntax = append(syntax, re)
			}
		}
		if len(syntax) > 0 && len(rep.Faults) >= maxReplyMessages {
			rep.Unlisted = true // the CONTRL cannot name it: it must not acknowledge it
		}
		if len(syntax) > 0 && len(rep.Faults) < maxReplyMessages {
			if rep.Faults == nil {
				rep.Faults = map[int][]*edifact.SyntaxError{}
			}
			fs := make([]*edifact.SyntaxError, len(syntax))
			for i, re := range syntax {
				fs[i] = ruleFault(re)
			}
			rep.Faults[m.Number] = fs
			// Its UCM needs its header; WriteCONTRL takes the S009 as sent
			// from the envelope.
			hdr := edifact.Message{Ref: m.Ref, Type: m.Type, Number: m.Number, Offset: m.Offset}
			if h := env.Message(m.Number); h != nil && h.Ref == m.Ref && len(h.ID) >= 4 {
				hdr.Version, hdr.Release, hdr.Agency = h.ID[1], h.ID[2], h.ID[3]
			}
			rep.Messages = append(rep.Messages, hdr)
		}
		if len(content) > 0 && len(ap.Messages) < maxReplyMessages {
			am := edifact.AperakMessage{Ref: m.Ref, Type: m.Type, Number: m.Number, Offset: m.Offset}
			for _, re := range content {
				seg := max(re.Segment, 1)
				am.Errors = append(am.Errors, edifact.AperakError{Code: AperakCode(re), Segment: seg, Tag: re.Tag,
					Element: re.Element, Component: re.Component, Offset: re.Offset, Text: re.Reason, Rule: re.Code})
			}
			ap.Messages = append(ap.Messages, am)
		}
		if rep.Unlisted && len(ap.Messages) >= maxReplyMessages {
			return errRepliesFull
		}
		return nil
	})
	return rep, ap
}

// ruleErrors is every *RuleError in err (a join of them, as CheckMessage
// returns), in order.
func ruleErrors(err error) []*RuleError {
	var out []*RuleError
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
				out = append(out, re)
			}
		}
	}
	walk(err)
	return out
}
