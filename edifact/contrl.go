package edifact

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// CONTRL action codes (0083).
const (
	ActionRejected     = "4" // this level and all lower levels rejected
	ActionAcknowledged = "7" // this level acknowledged, lower levels if not rejected
)

// ContrlReport is what a CONTRL answers: the interchange as far as it was
// read, and its first syntax error (nil when it was accepted).
type ContrlReport struct {
	Interchange *Interchange
	Err         *SyntaxError
	// Messages lists the messages read before the error (or all of them),
	// by reference and identifier, to acknowledge.
	Messages []Message
	// Reference is the CONTRL interchange's own control reference.
	Reference string
	Now       time.Time
}

// WriteCONTRL writes a CONTRL syntax and service report interchange back to
// the sender: UCI for the interchange (action 4 rejected or 7 acknowledged,
// with the 0085 code and the service segment when the fault is in UNA, UNB
// or UNZ), UCM for the message at fault (with the 0085 code, and UNH or UNT
// when the fault is there), UCS with the segment position counting UNH as 1
// and UCD with the element and component position for a fault inside a
// segment. Sender and recipient are swapped from the original.
func WriteCONTRL(out io.Writer, rep ContrlReport) error {
	ic := rep.Interchange
	if ic == nil {
		ic = &Interchange{}
	}
	if rep.Now.IsZero() {
		rep.Now = time.Now().UTC()
	}
	if rep.Reference == "" {
		rep.Reference = rep.Now.Format("060102150405")
	}
	w := NewWriter(out, DefaultDelimiters)
	w.Newline = true
	sender, recipient := orUnknown(ic.Recipient), orUnknown(ic.Sender)
	if err := w.WriteUNA(); err != nil {
		return err
	}
	w.WriteSegment("UNB", E("UNOC", "3"), E(sender), E(recipient), E(rep.Now.Format("060102"), rep.Now.Format("1504")), E(rep.Reference))
	start := w.Segments()
	w.WriteSegment("UNH", E("1"), E("CONTRL", "D", "3", "UN"))
	e := rep.Err
	action := ActionAcknowledged
	if e != nil {
		action = ActionRejected
	}
	uci := [][]string{E(ic.Reference), E(ic.Sender), E(ic.Recipient), E(action)}
	if e != nil && e.Segment == 0 {
		tag := e.Tag
		switch tag {
		case "UNA", "UNB", "UNZ":
		default:
			if errors.Is(e.Err, ErrMissingUNB) {
				tag = "UNB"
			} else {
				tag = ""
			}
		}
		uci = append(uci, E(strconv.Itoa(e.Code)), E(tag))
		if e.Element > 0 && tag != "" {
			uci = append(uci, E(strconv.Itoa(e.Element), compOrEmpty(e.Component)))
		}
	}
	w.WriteSegment("UCI", uci...)
	for _, m := range rep.Messages {
		if e != nil && e.Segment > 0 && m.Ref == e.Message {
			continue // reported below with its error
		}
		a := ActionAcknowledged
		if e != nil {
			a = ActionRejected
		}
		w.WriteSegment("UCM", E(m.Ref), E(m.Type, m.Version, m.Release, m.Agency), E(a))
	}
	if e != nil && e.Segment > 0 {
		typ := []string{}
		for _, m := range rep.Messages {
			if m.Ref == e.Message {
				typ = E(m.Type, m.Version, m.Release, m.Agency)
			}
		}
		switch e.Tag {
		case "UNH", "UNT":
			w.WriteSegment("UCM", E(e.Message), typ, E(ActionRejected), E(strconv.Itoa(e.Code)), E(e.Tag))
		default:
			w.WriteSegment("UCM", E(e.Message), typ, E(ActionRejected))
			w.WriteSegment("UCS", E(strconv.Itoa(e.Segment)), E(strconv.Itoa(e.Code)))
			if e.Element > 0 {
				w.WriteSegment("UCD", E(strconv.Itoa(e.Code)), E(strconv.Itoa(e.Element), compOrEmpty(e.Component)))
			}
		}
	}
	n := w.Segments() - start + 1
	w.WriteSegment("UNT", E(strconv.Itoa(n)), E("1"))
	w.WriteSegment("UNZ", E("1"), E(rep.Reference))
	if err := w.Flush(); err != nil {
		return fmt.Errorf("edifact: write CONTRL: %w", err)
	}
	return nil
}

func compOrEmpty(c int) string {
	if c <= 0 {
		return ""
	}
	return strconv.Itoa(c)
}

func orUnknown(s string) string {
	if s == "" {
		return "UNKNOWN"
	}
	return s
}
