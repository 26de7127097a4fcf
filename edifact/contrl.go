package edifact

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// CONTRL action codes (0083). Source: UN/EDIFACT service code list (UNSL)
// for 0083, syntax versions 3 and 4 (ISO 9735; UN/CEFACT JWG1 code list
// pages, e.g. service.gefeg.com/jwg1/Current/cl/cl14.htm).
const (
	ActionRejected     = "4" // this level and all lower levels rejected
	ActionAcknowledged = "7" // this level acknowledged, lower levels if not explicitly rejected
)

// Further 0085 codes CONTRL reports beside the parser's own (errors.go).
// Source: UNSL 0085 (ISO 9735 service code list; the same list in every
// UNTDID directory since D.01A, e.g. edifactory.de/edifact/directory/ISO9735/data-element/0085).
const (
	// CodeInvalidCharType: alphabetic characters in a numeric data element
	// (a UNT, UNE or UNZ count that is not a number).
	CodeInvalidCharType = 37
)

// ContrlReport is what a CONTRL answers: the interchange as far as it was
// read, and its first syntax error (nil when it was accepted).
type ContrlReport struct {
	Interchange *Interchange
	Err         *SyntaxError
	// Messages lists the messages read before the error (or all of them),
	// by reference and identifier, to acknowledge.
	Messages []Message
	// Envelope, when set, is the interchange's service segments as
	// ReadEnvelope read them: UNB, UCI, UCF and UCM then echo them whole
	// (identification qualifiers, routing addresses, S009 with its
	// association code, groups) and the syntax version of the answer
	// follows the interchange's. Without it they are rebuilt from
	// Interchange and Messages, which keep less.
	Envelope *Envelope
	// Faults rejects single messages of an interchange that is otherwise
	// acknowledged, keyed by message number (Message.Number): each gets a
	// UCM with action 4 and a UCS/UCD for every segment and element at
	// fault. For messages Lazaret parks for their syntax (the message
	// directory's findings); a business-rule rejection goes in an APERAK
	// (WriteAPERAK), unless the partner reads CONTRL only, when it is here
	// too (validate.ReplyMode).
	Faults map[int][]*SyntaxError
	// Unlisted says that more messages were rejected than Faults names
	// (a report stays bounded): then UCI (and every UCF) rejects the
	// interchange, action 4, for action 7 would acknowledge every
	// message the report does not name, the unlisted rejected ones too.
	Unlisted bool
	// Reference is the CONTRL interchange's own control reference (UNB
	// 0020, an..14). When empty it is derived from what the report
	// answers (ControlReference), never from the clock.
	Reference string
	Now       time.Time
	// Delimiters, when set, are the service characters of the report;
	// otherwise the sender's (ReplyDelimiters).
	Delimiters *Delimiters
}

// ControlReference is a control reference for a CONTRL interchange (0020,
// an..14): the first 14 hexadecimal digits, upper case, of the SHA-256 of
// parts. Digits and A-F are in every syntax level, UNOA included. The same
// parts give the same reference, so a report written again is the same
// bytes; different parts (another interchange, another attempt) give
// another reference, whatever the second it is written in.
func ControlReference(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return strings.ToUpper(hex.EncodeToString(h.Sum(nil))[:14])
}

// Fallbacks when no UNB could be read (the interchange does not start with
// one, or its UNB is unreadable): UCI 0020 is the UNZ's 0020 when a UNZ was
// read (UNZ repeats UNB's reference), otherwise UnknownReference; S002 and
// S003 are the application sender and recipient of the first UNG when
// there is one, otherwise UnknownParty. The syntax identifier and version
// of the answer are then those of the parsed header if any, else UNOC:3.
const (
	UnknownReference = "UNKNOWN"
	UnknownParty     = "UNKNOWN"
)

// WriteCONTRL writes a CONTRL syntax and service report interchange back to
// the sender. UNB swaps the original's sender and recipient, qualifiers and
// routing addresses included, answers in the original's syntax identifier
// and version (S001), and marks a test interchange as test (0035). UNH
// names CONTRL:D:3:UN for syntax versions 1 to 3 and CONTRL:4:1:UN for
// syntax version 4: the CONTRL of syntax 3 is the UNTDID's (D directory,
// release 3; segments UCI/UCF/UCM/UCS/UCD without security data), the
// CONTRL of syntax 4 is published with ISO 9735 version 4, release 1, with
// the longer S002/S003 and S009 (0110, 0113) its UNB and UNH carry. UCI
// answers the interchange (action 4 rejected or 7 acknowledged, with the
// 0085 code, the service segment and S011 when the fault is in UNA, UNB or
// UNZ), UCF each functional group (with the code when the fault is in UNG
// or UNE), UCM each message (with the code when the fault is in UNH or
// UNT), UCS the segment at fault counting UNH as 1 and UCD the element and
// component. The codes are UNSL 0083 and 0085 (see the constants).
func WriteCONTRL(out io.Writer, rep ContrlReport) error {
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
	var e *SyntaxError
	if rep.Err != nil {
		c := *rep.Err
		c.Code = contrlCode(&c, env, rep.Messages, ic)
		// A missing trailer is reported at the trailer: the parser names
		// the segment where it noticed (a UNH, UNG or UNZ too early).
		switch {
		case errors.Is(c.Err, ErrMissingUNT) && c.Segment > 0:
			c.Tag, c.Element, c.Component = "UNT", 0, 0
		case errors.Is(c.Err, ErrMissingUNE):
			c.Tag, c.Element, c.Component, c.Segment = "UNE", 0, 0, 0
		}
		e = &c
	}

	// What the UCI echoes: UNB as read, or the documented fallback.
	ref, sender, recipient := replyParties(env)
	synID, ver := answerSyntax(env, ic)
	if rep.Reference == "" {
		code := ""
		if e != nil {
			code = fmt.Sprintf("%d/%d/%s/%d", e.Code, e.Offset, e.Tag, e.Element)
		}
		rep.Reference = ControlReference(strings.Join(sender, ":"), strings.Join(recipient, ":"), ref, code)
	}

	d := ReplyDelimiters(env)
	if rep.Delimiters != nil {
		d = *rep.Delimiters
	}
	date := rep.Now.Format("060102")
	msgID := E("CONTRL", "D", "3", "UN")
	if ver == 4 {
		date = rep.Now.Format("20060102") // syntax 4: 0017 is CCYYMMDD
		msgID = E("CONTRL", "4", "1", "UN")
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
	w.WriteSegment("UNB", E(synID, strconv.Itoa(ver)), recipient, sender, E(date, rep.Now.Format("1504")), E(rep.Reference),
		nil, nil, nil, nil, nil, E(test))
	start := w.Segments()
	w.WriteSegment("UNH", E("1"), msgID)

	action := ActionAcknowledged
	if e != nil || rep.Unlisted {
		action = ActionRejected
	}
	uci := [][]string{E(ref), sender, recipient, E(action)}
	level := faultLevel(e)
	if level == levelInterchange {
		tag := e.Tag
		switch {
		case errors.Is(e.Err, ErrMissingUNB):
			tag = "UNB"
		case tag != "UNA" && tag != "UNB" && tag != "UNZ":
			tag = ""
		}
		uci = append(uci, E(strconv.Itoa(e.Code)), E(tag))
		if e.Element > 0 && tag != "" {
			uci = append(uci, E(strconv.Itoa(e.Element), compOrEmpty(e.Component)))
		}
	}
	w.WriteSegment("UCI", uci...)

	// The message the error stopped in (or that broke a rule): the last
	// one read with the error's reference.
	atFault := -1
	if level == levelMessage {
		for i := range rep.Messages {
			if rep.Messages[i].Ref == e.Message {
				atFault = i
			}
		}
	}
	faultGroup := 0
	if level == levelGroup {
		faultGroup = groupAt(env, e)
	}
	// SG1 holds the messages outside groups, SG3 each group (UCF) and its
	// messages.
	byGroup := make([][]int, len(env.Groups)+1)
	for i, m := range rep.Messages {
		g := 0
		if h := env.Message(m.Number); h != nil && h.Ref == m.Ref && h.Group <= len(env.Groups) {
			g = h.Group
		}
		byGroup[g] = append(byGroup[g], i)
	}
	writeUCM := func(i int) {
		m := &rep.Messages[i]
		id := E(m.Type, m.Version, m.Release, m.Agency, m.Assoc)
		if h := env.Message(m.Number); h != nil && h.Ref == m.Ref && len(h.ID) > 0 {
			id = h.ID
		}
		faults := rep.Faults[m.Number]
		if i == atFault {
			faults = []*SyntaxError{e}
		}
		if len(faults) == 0 {
			w.WriteSegment("UCM", E(m.Ref), id, E(action))
			return
		}
		writeRejectedMessage(w, m.Ref, id, faults)
	}
	for _, i := range byGroup[0] {
		writeUCM(i)
	}
	for gi, g := range env.Groups {
		ucf := [][]string{E(g.Reference), g.Sender, g.Recipient, E(action)}
		if gi+1 == faultGroup {
			ucf = append(ucf, E(strconv.Itoa(e.Code)), E(e.Tag))
			if e.Element > 0 {
				ucf = append(ucf, E(strconv.Itoa(e.Element), compOrEmpty(e.Component)))
			}
		}
		w.WriteSegment("UCF", ucf...)
		for _, i := range byGroup[gi+1] {
			writeUCM(i)
		}
	}
	n := w.Segments() - start + 1
	w.WriteSegment("UNT", E(strconv.Itoa(n)), E("1"))
	w.WriteSegment("UNZ", E("1"), E(rep.Reference))
	if err := w.Flush(); err != nil {
		return fmt.Errorf("edifact: write CONTRL: %w", err)
	}
	if err := w.Err(); err != nil {
		return fmt.Errorf("edifact: write CONTRL: %w", err)
	}
	return nil
}

// CONTRL's bounds on the errors of one message (segment group 2: UCS
// repeats 999 times, UCD 99 times within it).
const (
	maxUCS = 999
	maxUCD = 99
)

// writeRejectedMessage writes the UCM (action 4) of a message with faults:
// the first fault in UNH or UNT in the UCM itself (0085, 0013, S011), every
// other as a UCS for its segment (with the code when the fault is the whole
// segment) and a UCD for each element at fault, segments in the order the
// faults name them, within CONTRL's repetition bounds.
func writeRejectedMessage(w *Writer, ref string, id []string, faults []*SyntaxError) {
	var head *SyntaxError
	var body []*SyntaxError
	for _, f := range faults {
		if head == nil && (f.Tag == "UNH" || f.Tag == "UNT") {
			head = f
			continue
		}
		body = append(body, f)
	}
	ucm := [][]string{E(ref), id, E(ActionRejected)}
	if head != nil {
		ucm = append(ucm, E(strconv.Itoa(head.Code)), E(head.Tag))
		if head.Element > 0 {
			ucm = append(ucm, E(strconv.Itoa(head.Element), compOrEmpty(head.Component)))
		}
	}
	w.WriteSegment("UCM", ucm...)
	var order []int
	bySeg := map[int][]*SyntaxError{}
	for _, f := range body {
		seg := max(f.Segment, 1)
		if _, ok := bySeg[seg]; !ok {
			order = append(order, seg)
		}
		bySeg[seg] = append(bySeg[seg], f)
	}
	for _, seg := range order[:min(len(order), maxUCS)] {
		code := ""
		var elems []*SyntaxError
		for _, f := range bySeg[seg] {
			if f.Element > 0 {
				elems = append(elems, f)
			} else if code == "" {
				code = strconv.Itoa(f.Code)
			}
		}
		w.WriteSegment("UCS", E(strconv.Itoa(seg)), E(code))
		for _, f := range elems[:min(len(elems), maxUCD)] {
			w.WriteSegment("UCD", E(strconv.Itoa(f.Code)), E(strconv.Itoa(f.Element), compOrEmpty(f.Component)))
		}
	}
}

// Where a fault is reported.
const (
	levelNone = iota
	levelInterchange
	levelGroup
	levelMessage
)

func faultLevel(e *SyntaxError) int {
	switch {
	case e == nil:
		return levelNone
	case errors.Is(e.Err, ErrMissingUNB):
		return levelInterchange
	case e.Segment > 0:
		return levelMessage
	case e.Tag == "UNG" || e.Tag == "UNE":
		return levelGroup
	}
	return levelInterchange
}

// replyParties is what a reply echoes of the interchange it answers: UNB
// 0020, S002 and S003 as read, or the documented fallbacks
// (UnknownReference, UnknownParty).
func replyParties(env *Envelope) (ref string, sender, recipient []string) {
	ref, sender, recipient = env.Reference, env.Sender, env.Recipient
	if !env.HasUNB || ref == "" {
		ref = UnknownReference
		if env.UNZReference != "" {
			ref = env.UNZReference
		}
	}
	if !env.HasUNB || len(sender) == 0 || sender[0] == "" {
		sender = []string{UnknownParty}
		if len(env.Groups) > 0 && len(env.Groups[0].Sender) > 0 && env.Groups[0].Sender[0] != "" {
			sender = env.Groups[0].Sender
		}
	}
	if !env.HasUNB || len(recipient) == 0 || recipient[0] == "" {
		recipient = []string{UnknownParty}
		if len(env.Groups) > 0 && len(env.Groups[0].Recipient) > 0 && env.Groups[0].Recipient[0] != "" {
			recipient = env.Groups[0].Recipient
		}
	}
	return ref, sender, recipient
}

// groupAt is the group (1-based index into env.Groups) a group-level fault
// is in: the last group that starts at or before the fault; for a missing
// UNE the last one still open before it (a UNG or UNZ came first), or the
// one at the fault (the input ended).
func groupAt(env *Envelope, e *SyntaxError) int {
	at := 0
	for gi, g := range env.Groups {
		if errors.Is(e.Err, ErrMissingUNE) {
			if !g.Closed && g.Offset < e.Offset || g.Offset == e.Offset && at == 0 {
				at = gi + 1
			}
			continue
		}
		if g.Offset <= e.Offset {
			at = gi + 1
		}
	}
	return at
}

// answerSyntax is the syntax identifier and version a CONTRL answers in:
// the interchange's (ISO 9735: a service message is sent in the syntax
// version of the interchange it answers), UNOC:3 when none was read or it
// is not one Parse supports (UNOA..UNOK, UNOW..UNOZ, IATA, IATB; versions
// 1 to 4).
func answerSyntax(env *Envelope, ic *Interchange) (string, int) {
	id, ver := env.SyntaxID, 0
	if n, err := strconv.Atoi(env.SyntaxVersion); err == nil {
		ver = n
	}
	if id == "" {
		id, ver = ic.SyntaxID, ic.SyntaxVersion
	}
	known := id == "IATA" || id == "IATB" || len(id) == 4 && strings.HasPrefix(id, "UNO") && strings.ContainsRune("ABCDEFGHIJKWXYZ", rune(id[3]))
	if !known || ver < 1 || ver > 4 {
		id, ver = "UNOC", 3
	}
	return id, ver
}

// contrlCode is the 0085 code CONTRL reports for e. The parser names a
// count it cannot read a count mismatch (29); CONTRL says what the count
// is: missing (13), not a number (37) or longer than n..6 (39).
func contrlCode(e *SyntaxError, env *Envelope, msgs []Message, ic *Interchange) int {
	if e.Code != CodeCountMismatch || e.Element != 1 || !errors.Is(e.Err, ErrCount) {
		return e.Code
	}
	count, known := "", false
	switch e.Tag {
	case "UNZ":
		count, known = env.UNZCount, env.HasUNZ
	case "UNE":
		if gi := groupAt(env, e); gi > 0 {
			g := env.Groups[gi-1]
			count, known = g.Count, g.Closed
		}
	case "UNT":
		n := 0
		if ic.Open != nil {
			n = ic.Open.Number
		}
		for _, m := range msgs {
			if m.Ref == e.Message {
				n = m.Number
			}
		}
		if h := env.Message(n); h != nil && h.Ref == e.Message {
			count, known = h.Count, true
		}
	}
	if !known {
		return e.Code
	}
	switch {
	case count == "":
		return CodeMissing
	case strings.Trim(count, "0123456789") != "":
		return CodeInvalidCharType
	case len(count) > 6:
		return CodeTooLong
	}
	return e.Code
}

// envelopeOf is what Interchange and Messages keep of the envelope, for a
// report without an Envelope.
func envelopeOf(ic *Interchange) *Envelope {
	env := &Envelope{HasUNA: ic.HasUNA, Delimiters: ic.Delimiters, HasUNB: ic.Sender != "" || ic.Reference != "", SyntaxID: ic.SyntaxID,
		Reference: ic.Reference, Date: ic.Date, Time: ic.Time}
	if ic.SyntaxVersion > 0 {
		env.SyntaxVersion = strconv.Itoa(ic.SyntaxVersion)
	}
	if ic.Sender != "" {
		env.Sender = []string{ic.Sender}
	}
	if ic.Recipient != "" {
		env.Recipient = []string{ic.Recipient}
	}
	return env
}

func compOrEmpty(c int) string {
	if c <= 0 {
		return ""
	}
	return strconv.Itoa(c)
}
