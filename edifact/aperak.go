package edifact

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The APERAK Lazaret writes: UN/EDIFACT directory D.01B, the first of the
// releases in ../shared/corpus/edifact-directory whose code list 1001
// holds 305 (D.96A to D.97B have none for an APERAK), with segment group 4
// repeated 99999 times (an error each) and a reference group (SG5) in
// every error. The codes are from that release's code lists as the
// directory holds them (package edifact/directory).
const (
	AperakVersion = "D"
	AperakRelease = "01B"
	// AperakDocument is BGM 1001: application error and acknowledgement.
	AperakDocument = "305"
	// AperakNotAccepted is BGM 1225 (message function): not accepted.
	AperakNotAccepted = "27"
	// TextErrorDescription is FTX 4451: error description (free text).
	TextErrorDescription = "AAO"
	// RefPreviousMessage is RFF 1153: reference number to previous
	// message, the UNH 0062 of the message answered.
	RefPreviousMessage = "ACW"
	// RefMutuallyDefined is RFF 1153: mutually defined reference number,
	// here the interchange control reference (UNB 0020) of the
	// interchange answered; 1153 has no code for it.
	RefMutuallyDefined = "ZZZ"
	// AgencyMutuallyDefined is 3055 of ERC C901: the application error
	// codes (9321, an..8) are Lazaret's. Code list 9321 is user or
	// association defined: no UN/EDIFACT directory publishes its values.
	AgencyMutuallyDefined = "ZZZ"
	// PartyMessageSender and PartyMessageRecipient are NAD 3035: the
	// APERAK's sender (the recipient of the interchange answered) and its
	// recipient (that interchange's sender).
	PartyMessageSender    = "MS"
	PartyMessageRecipient = "MR"
)

// APERAK's bounds: errors of one message (segment group 4 repeats 99999
// times; Lazaret reports the first maxAperakErrors, as CONTRL reports 999
// segments), characters of one FTX 4440 (an..512), reference lengths
// (C506 1154 an..70, 1156 an..6) and the 4440 components of C108 (5).
const (
	maxAperakErrors = 999
	maxText         = 512
	maxRef          = 70
	maxLine         = 6
	maxTexts        = 5
)

// AperakReport is what an APERAK answers: the messages of one interchange
// that broke business rules (unknown UN/LOCODE, ISO 6346 check digit, VGM,
// HS code, party role), each with its faults.
type AperakReport struct {
	Interchange *Interchange
	// Envelope is the interchange's service segments as ReadEnvelope read
	// them; without it they are rebuilt from Interchange (as for CONTRL).
	Envelope *Envelope
	Messages []AperakMessage
	// Reference is the APERAK interchange's control reference (UNB 0020,
	// an..14); when empty it is derived from what the report answers.
	Reference string
	Now       time.Time
	// Delimiters, when set, are the service characters of the report;
	// otherwise the sender's (ReplyDelimiters).
	Delimiters *Delimiters
}

// AperakMessage is one message answered: its UNH reference, type, place
// in the interchange (1-based) and UNH byte offset, and its faults.
type AperakMessage struct {
	Ref    string
	Type   string
	Number int
	Offset int64
	Errors []AperakError
}

// AperakError is one fault: the application error code (9321), where it
// is (Segment 1-based in the message, UNH = 1; Element and Component
// 1-based, 0 = the whole segment or element; Offset the 0-based byte in
// the interchange) and why, in words.
type AperakError struct {
	Code      string
	Segment   int
	Tag       string
	Element   int
	Component int
	Offset    int64
	Text      string
	// Rule is the checker's own name for the rule (e.g.
	// "edifact.locode.unknown"), for the caller; it is not written.
	Rule string
}

// Position is where e is, in words a partner reads without a translator:
// "segment 5 (LOC), element 2, component 1, byte 311". It holds no service
// character of the default delimiters.
func (e *AperakError) Position() string {
	var b strings.Builder
	fmt.Fprintf(&b, "segment %d", e.Segment)
	if e.Tag != "" {
		fmt.Fprintf(&b, " (%s)", e.Tag)
	}
	if e.Element > 0 {
		fmt.Fprintf(&b, ", element %d", e.Element)
		if e.Component > 0 {
			fmt.Fprintf(&b, ", component %d", e.Component)
		}
	}
	fmt.Fprintf(&b, ", byte %d", e.Offset)
	return b.String()
}

// WriteAPERAK writes an APERAK interchange back to the sender: one APERAK
// D.01B message per message answered. UNA, UNB and UNZ are as WriteCONTRL
// writes them (sender and recipient swapped, the interchange's syntax
// identifier and version, its test indicator, the sender's separators).
// Each message holds
//
//	BGM+305+<reference>-<n>+27            application error, not accepted (N for - when - is a separator)
//	DTM+137:<CCYYMMDDHHMM>:203           when it was written
//	RFF+ACW:<UNH 0062>                   the message answered
//	RFF+ZZZ:<UNB 0020>                   the interchange it came in
//	NAD+MS+<UNB recipient> NAD+MR+<UNB sender>
//
// and for each fault an error group:
//
//	ERC+<9321>::ZZZ                      the application error code
//	FTX+AAO+++<position>:<reason>        e.g. "segment 5 (LOC), element 2, component 1, byte 311"
//	RFF+ACW:<UNH 0062>:<segment>         the message again, 1156 = the segment position (UNH = 1)
//
// An APERAK answers at least one message: with none it is an error.
// Free text is cut to its directory length, kept to printable ASCII
// (upper case in UNOA and IATA) and, without a release character, rid of service
// characters; a reference (1154, an..70) is cut to its length.
func WriteAPERAK(out io.Writer, rep AperakReport) error {
	if len(rep.Messages) == 0 {
		return errors.New("edifact: write APERAK: no message to answer")
	}
	ic := rep.Interchange
	if ic == nil {
		ic = &Interchange{}
	}
	env := rep.Envelope
	if env == nil {
		env = envelopeOf(ic)
	}
	if rep.Now.IsZero() {
		rep.Now = time.Now().UTC()
	}
	ref, sender, recipient := replyParties(env)
	synID, ver := answerSyntax(env, ic)
	if rep.Reference == "" {
		parts := []string{"APERAK", strings.Join(sender, ":"), strings.Join(recipient, ":"), ref}
		for _, m := range rep.Messages {
			parts = append(parts, m.Ref, strconv.Itoa(len(m.Errors)))
		}
		rep.Reference = ControlReference(parts...)
	}
	d := ReplyDelimiters(env)
	if rep.Delimiters != nil {
		d = *rep.Delimiters
	}
	date := rep.Now.Format("060102")
	if ver == 4 {
		date = rep.Now.Format("20060102")
	}
	w := NewWriter(out, d)
	w.Newline, w.Printable = true, true
	if err := w.WriteUNA(); err != nil {
		return err
	}
	test := ""
	if env.Test == "1" {
		test = "1"
	}
	text := func(s string) string { return replyText(s, synID, d) }
	seg := func(tag string, elements ...[]string) { w.WriteSegment(tag, elements...) }
	// The document number is the reference and the message's place; '-'
	// between them unless the sender made it a service character.
	dash := "-"
	if d.Release == 0 && w.special(dash) {
		dash = "N"
	}
	seg("UNB", E(synID, strconv.Itoa(ver)), recipient, sender, E(date, rep.Now.Format("1504")), E(rep.Reference),
		nil, nil, nil, nil, nil, E(test))
	for i, m := range rep.Messages {
		n := strconv.Itoa(i + 1)
		start := w.Segments()
		msgRef := cut(m.Ref, maxRef)
		seg("UNH", E(n), E("APERAK", AperakVersion, AperakRelease, "UN"))
		seg("BGM", E(AperakDocument), E(rep.Reference+dash+n), E(AperakNotAccepted))
		seg("DTM", E("137", rep.Now.Format("200601021504"), "203"))
		seg("RFF", E(RefPreviousMessage, msgRef))
		seg("RFF", E(RefMutuallyDefined, cut(ref, maxRef)))
		seg("NAD", E(PartyMessageSender), E(cut(recipient[0], 35)))
		seg("NAD", E(PartyMessageRecipient), E(cut(sender[0], 35)))
		for _, e := range m.Errors[:min(len(m.Errors), maxAperakErrors)] {
			code := e.Code
			if code == "" {
				code = strconv.Itoa(CodeUnspecified)
			}
			seg("ERC", E(text(cut(code, 8)), "", AgencyMutuallyDefined))
			texts := []string{text(e.Position())}
			reason := text(e.Text)
			for reason != "" && len(texts) < maxTexts {
				k := min(len(reason), maxText)
				texts = append(texts, reason[:k])
				reason = reason[k:]
			}
			seg("FTX", E(TextErrorDescription), nil, nil, texts)
			seg("RFF", E(RefPreviousMessage, msgRef, cut(strconv.Itoa(max(e.Segment, 1)), maxLine)))
		}
		seg("UNT", E(strconv.Itoa(w.Segments()-start+1)), E(n))
	}
	seg("UNZ", E(strconv.Itoa(len(rep.Messages))), E(rep.Reference))
	if err := w.Flush(); err != nil {
		return fmt.Errorf("edifact: write APERAK: %w", err)
	}
	if err := w.Err(); err != nil {
		return fmt.Errorf("edifact: write APERAK: %w", err)
	}
	return nil
}

// cut is s cut to n bytes.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// replyText is text Lazaret writes in a reply (FTX 4440, ERC 9321):
// printable ASCII, and a character beyond it only where the reply's set
// holds it (encoded back into an ISO 8859 part, kept in UNOW and UNOY:
// a value shown as its text, see Charset), other bytes becoming '.', in
// upper case for UNOA and IATA (whose repertoire has no lower case
// letters) with the characters UNOA lacks becoming '.' too, and, when
// there is no release character, every service character becoming a
// space, so that the text can always be written.
func replyText(s, synID string, d Delimiters) string {
	encoded := false
	if cs := CharsetOf(synID); cs != ascii && !isASCII(s) {
		s, encoded = cs.encodeReply(s), true
	}
	b := []byte(s)
	for i, c := range b {
		if c >= 0x80 && encoded {
			continue // put there by encodeReply, as the set holds it
		}
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		if synID == "UNOA" || synID == "IATA" {
			if c >= 'a' && c <= 'z' {
				c -= 'a' - 'A'
			}
			if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(" .,-()/='+:?!\"%&*;<>", c) >= 0) {
				c = '.'
			}
		}
		if d.Release == 0 && (c == d.Component || c == d.Element || c == d.Terminator || d.Repetition != 0 && c == d.Repetition) {
			c = ' '
		}
		b[i] = c
	}
	return string(b)
}
