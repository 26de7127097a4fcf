package edifact

import (
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Envelope is what could be read of an interchange's service segments, as
// sent, for the CONTRL that answers it: UNB with every component (the
// identification qualifiers and routing addresses of S002 and S003, the
// acknowledgement request 0031, the test indicator 0035), each UNG, each
// UNH's S009 whole and the counts UNT, UNE and UNZ declare. ReadEnvelope
// fills it without judging it: a count that is not a number is kept as it
// was sent, so that the report can say so.
type Envelope struct {
	HasUNA bool
	// Delimiters are the service characters the sender used: its UNA's
	// when HasUNA, otherwise the defaults (see ReplyDelimiters).
	Delimiters Delimiters
	HasUNB     bool
	// UNB, component by component (S001 syntax identifier and version,
	// S002 sender, S003 recipient, S004 date and time). Sender and
	// Recipient are nil when no UNB could be read.
	SyntaxID, SyntaxVersion string
	Sender, Recipient       []string
	Date, Time              string
	Reference               string // 0020
	AckRequest              string // 0031: "1" asks for an acknowledgement
	Test                    string // 0035: "1" marks a test interchange
	// UNZ, when one was read.
	HasUNZ                 bool
	UNZCount, UNZReference string
	Groups                 []GroupEnvelope
	// Messages in order (Messages[i] is message number i+1), at most
	// MaxEnvelopeMessages of them; Truncated says more were left out.
	Messages  []MessageEnvelope
	Truncated bool
	// Stopped is the reader's error that ended the scan early (nil when it
	// read to the end).
	Stopped error
}

// GroupEnvelope is one UNG .. UNE as sent.
type GroupEnvelope struct {
	ID                string   // 0038
	Sender, Recipient []string // S006 (0040, 0007), S007 (0044, 0007)
	Reference         string   // 0048
	Count             string   // UNE 0060; "" until UNE is read
	Closed            bool     // UNE read
	Offset            int64    // of UNG
}

// MessageEnvelope is one message's header and trailer as sent.
type MessageEnvelope struct {
	Ref string // 0062
	// ID is S009 whole: 0065, 0052, 0054, 0051, 0057 and, in syntax 4,
	// 0110 and 0113, with trailing empty components dropped.
	ID     []string
	Group  int    // 1-based index into Envelope.Groups; 0 outside a group
	Count  string // UNT 0074 as sent; "" until UNT is read
	Offset int64  // of UNH
}

// MaxEnvelopeMessages bounds how many message headers ReadEnvelope keeps:
// with at most 7 components of at most maxEnvelopeValue bytes each, about
// 8 MiB.
const MaxEnvelopeMessages = 1 << 14

// maxEnvelopeValue bounds a kept value: the longest service data element
// echoed (0004, 0008, 0010, 0014, 0040, 0044 ...) is an..35; a longer one is
// invalid and kept cut.
const maxEnvelopeValue = 35

// maxEnvelopeGroups bounds how many group headers ReadEnvelope keeps.
const maxEnvelopeGroups = 1 << 12

// ReadEnvelope reads the service segments of the interchange in r, in one
// pass and bounded memory (lim as for Parse; at most MaxEnvelopeMessages
// message headers and 4096 groups), and never fails: it stops at the first
// segment the reader cannot read and says why in Stopped. It does not check
// the envelope (Parse does); it keeps what was sent. A first segment that
// is not UNB leaves HasUNB false and the scan goes on, so that the groups,
// messages and UNZ of an interchange without UNB are still known.
//
// An input of several interchanges is read to the UNZ of its first:
// ReadEnvelopeAt reads any of them.
func ReadEnvelope(r io.Reader, lim Limits) *Envelope {
	return ReadEnvelopeAt(r, 0, lim)
}

// ReadEnvelopeAt is ReadEnvelope for an interchange that begins at byte
// start of its input (Interchange.Start), r reading from there: the
// offsets it keeps count from the start of the input.
func ReadEnvelopeAt(r io.Reader, start int64, lim Limits) *Envelope {
	lim = lim.withDefaults()
	rd := NewReader(r, lim)
	rd.base = start
	env := &Envelope{}
	first, group, inMsg := true, 0, false
	var segments int64
	for {
		s, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				env.Stopped = err
			}
			break
		}
		if segments++; segments > lim.MaxSegments {
			env.Stopped = ErrTooManySegments
			break
		}
		if first {
			first = false
			env.HasUNA, env.Delimiters = rd.HasUNA(), rd.Delimiters()
			if s.Tag == "UNB" {
				env.readUNB(s)
				if env.SyntaxVersion == "4" && !rd.HasUNA() {
					rd.SetRepetition('*')
				}
				continue
			}
		}
		switch s.Tag {
		case "UNG":
			if len(env.Groups) >= maxEnvelopeGroups {
				env.Truncated = true
				group = 0
				continue
			}
			env.Groups = append(env.Groups, GroupEnvelope{ID: value(s, 1, 1), Sender: components(s, 2, 2), Recipient: components(s, 3, 2),
				Reference: value(s, 5, 1), Offset: s.Offset})
			group = len(env.Groups)
		case "UNE":
			if group > 0 {
				g := &env.Groups[group-1]
				g.Count, g.Closed = value(s, 1, 1), true
			}
			group = 0
		case "UNH":
			inMsg = true
			if len(env.Messages) >= MaxEnvelopeMessages {
				env.Truncated = true
				continue
			}
			env.Messages = append(env.Messages, MessageEnvelope{Ref: value(s, 1, 1), ID: components(s, 2, 7), Group: group, Offset: s.Offset})
		case "UNT":
			if inMsg && !env.Truncated && len(env.Messages) > 0 {
				env.Messages[len(env.Messages)-1].Count = value(s, 1, 1)
			}
			inMsg = false
		case "UNO":
			// A package's octets are skipped by their declared length, as
			// Parse skips them (a length that is not one stops the scan
			// where the octets would be read as segments).
			n, err := strconv.ParseInt(value(s, 4, 1), 10, 64)
			if err != nil || n < 0 {
				env.Stopped = fmt.Errorf("%w: UNO at byte %d", ErrObjectLength, s.Offset)
				return env
			}
			if got, err := rd.SkipBytes(n); err != nil || got < n {
				env.Stopped = fmt.Errorf("%w: UNO at byte %d declares %d octets, %d follow", ErrObjectLength, s.Offset, n, got)
				return env
			}
		case "UNZ":
			env.HasUNZ, env.UNZCount, env.UNZReference = true, value(s, 1, 1), value(s, 2, 1)
			if rd.NextInterchange() {
				return env // the next interchange's envelope is its own
			}
		}
	}
	return env
}

func (env *Envelope) readUNB(s *Segment) {
	env.HasUNB = true
	env.SyntaxID, env.SyntaxVersion = value(s, 1, 1), value(s, 1, 2)
	env.Sender, env.Recipient = components(s, 2, 4), components(s, 3, 4)
	env.Date, env.Time = value(s, 4, 1), value(s, 4, 2)
	env.Reference = value(s, 5, 1)
	env.AckRequest, env.Test = value(s, 9, 1), value(s, 11, 1)
}

// value is component c of element e, cut to maxEnvelopeValue bytes.
func value(s *Segment, e, c int) string {
	v := s.Value(e, c)
	if len(v) > maxEnvelopeValue {
		v = v[:maxEnvelopeValue]
	}
	return v
}

// components is data element e of s, at most limit components (the
// composite's own number: more are invalid and not echoed) up to the last
// one that is not empty; nil when e is absent or empty.
func components(s *Segment, e, limit int) []string {
	n := min(s.Components(e), limit)
	out := make([]string, 0, n)
	last := 0
	for c := 1; c <= n; c++ {
		v := value(s, e, c)
		out = append(out, v)
		if v != "" {
			last = c
		}
	}
	if last == 0 {
		return nil
	}
	return out[:last]
}

// Message returns the header of message number n (1-based), or nil.
func (env *Envelope) Message(n int) *MessageEnvelope {
	if env == nil || n < 1 || n > len(env.Messages) {
		return nil
	}
	return &env.Messages[n-1]
}
