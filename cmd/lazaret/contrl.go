package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/validate"
)

// replyCheck is what lazaret contrl and lazaret aperak share: the
// interchange checked as the worker checks it, and the replies it gets,
// split by the sender's reply mode (--reply-mode, --reply-partner).
type replyCheck struct {
	file   string
	mode   validate.ReplyMode
	sender string
	contrl edifact.ContrlReport
	aperak edifact.AperakReport
	// rejected: the interchange was rejected whole (its envelope).
	rejected bool
}

// checkReplies checks the interchange named by the one argument args holds.
func checkReplies(ctx context.Context, name string, args []string, cfg *Config) (*replyCheck, error) {
	if len(args) != 1 {
		return nil, usageErr("%s: want exactly one FILE.edi", name)
	}
	store := cfg.registryStore()
	if _, err := store.Refresh(); err != nil {
		return nil, err
	}
	file := args[0]
	report, res, err := validate.CheckInterchange(ctx, file, nil, store.Current(), cfg.ediRules(), "")
	var stage *validate.StageError
	if res == nil || asAny(err, &stage) && stage.Stage == validate.StageOpen {
		if err == nil {
			err = fmt.Errorf("%s: cannot be read", file)
		}
		return nil, &exitError{code: 1, err: err}
	}
	// The envelope of the interchange the reply answers: of a file of
	// several, the first, or the one at fault.
	env := validate.ReadEnvelopeOf(validate.SourceOf(file), res.Answered(err))
	rc := &replyCheck{file: file, rejected: err != nil}
	if env != nil && len(env.Sender) > 0 {
		rc.sender = env.Sender[0]
	}
	policy := cfg.replies()
	rc.mode = policy.ModeFor(rc.sender)
	rc.contrl, rc.aperak = res.Replies(env, err, rc.mode)
	// One reference per interchange and reply, never per second.
	rc.contrl.Reference = edifact.ControlReference(report.SHA256, file)
	rc.aperak.Reference = edifact.ControlReference("APERAK", report.SHA256, file)
	if d, ok := policy.Separators(env); ok {
		rc.contrl.Delimiters, rc.aperak.Delimiters = &d, &d
	}
	return rc, nil
}

// declareContrl declares lazaret contrl, which prints the CONTRL syntax and
// service report Lazaret would send back for an interchange: rejected
// (action 4) with the fault's position and 0085 code, or acknowledged
// (action 7). With --json it exits 1 when the report rejects anything.
func declareContrl(fs *pflag.FlagSet, _ *Config) ([]string, action) {
	asJSON := fs.Bool("json", false, "one JSON object: every action and error code of the report with its position, and the CONTRL text; exit 1 when it rejects anything")
	return []string{"edi"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		rc, err := checkReplies(ctx, "contrl", args, cfg)
		if err != nil {
			return err
		}
		var text bytes.Buffer
		err = edifact.WriteCONTRL(&text, rc.contrl)
		if errors.Is(err, edifact.ErrUnencodable) {
			// As the worker does: the sender's separators cannot carry it.
			text.Reset()
			d := edifact.DefaultDelimiters
			rc.contrl.Delimiters = &d
			err = edifact.WriteCONTRL(&text, rc.contrl)
		}
		if err != nil {
			return err
		}
		if !*asJSON {
			if !rc.mode.Contrl() {
				fmt.Fprintf(stderr, "lazaret contrl: sender %s reads APERAK only (reply mode %s): the worker sends it no CONTRL\n", rc.sender, rc.mode)
			}
			// A document: byte for byte to a file or a pipe, escaped on a
			// terminal (exact).
			_, err := io.Copy(exact(stdout), &text)
			return err
		}
		out := newContrlJSON(rc, text.String())
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
		if out.Rejected {
			return &exitError{code: 1}
		}
		return nil
	}
}

// declareAperak declares lazaret aperak, which prints the APERAK
// (application error and acknowledgement) Lazaret would send back for the
// messages of an interchange that broke business rules or registries. With
// --json it exits 1 when the report rejects anything, or the interchange was
// rejected whole (its CONTRL answers it).
func declareAperak(fs *pflag.FlagSet, _ *Config) ([]string, action) {
	asJSON := fs.Bool("json", false, "one JSON object: every message rejected, each error code with its position, and the APERAK text; exit 1 when it rejects anything")
	return []string{"edi"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		rc, err := checkReplies(ctx, "aperak", args, cfg)
		if err != nil {
			return err
		}
		rep := rc.aperak
		var text bytes.Buffer
		if len(rep.Messages) > 0 {
			err := edifact.WriteAPERAK(&text, rep)
			if errors.Is(err, edifact.ErrUnencodable) {
				text.Reset()
				d := edifact.DefaultDelimiters
				rep.Delimiters = &d
				err = edifact.WriteAPERAK(&text, rep)
			}
			if err != nil {
				return err
			}
		}
		why := ""
		switch {
		case rc.rejected:
			why = "the interchange is rejected whole (its envelope or syntax): its CONTRL answers it (lazaret contrl)"
		case !rc.mode.Aperak():
			why = fmt.Sprintf("sender %s reads CONTRL only (reply mode %s): its CONTRL rejects the parked messages", rc.sender, rc.mode)
		case len(rep.Messages) == 0:
			why = "no message broke a business rule: there is nothing for an APERAK to answer"
		}
		if !*asJSON {
			if why != "" {
				fmt.Fprintln(stderr, "lazaret aperak: "+why)
			}
			_, err := io.Copy(exact(stdout), &text)
			return err
		}
		out := newAperakJSON(rc, text.String(), why)
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
		if out.Rejected || out.InterchangeRejected {
			return &exitError{code: 1}
		}
		return nil
	}
}

// contrlJSON is lazaret contrl --json.
type contrlJSON struct {
	File string `json:"file"`
	// Mode is the sender's reply mode: which faults a CONTRL carries.
	Mode   string `json:"mode"`
	Action string `json:"action"` // UCI 0083: "7" acknowledged, "4" rejected
	// Rejected: the report rejects something (the interchange, a group
	// or a message).
	Rejected    bool               `json:"rejected"`
	Interchange contrlInterchange  `json:"interchange"`
	Error       *contrlError       `json:"error"` // the interchange's fault; nil when its envelope was accepted
	Messages    []contrlMessageRef `json:"messages"`
	// Entries are the report's UCI, UCF, UCM, UCS and UCD, in order, as
	// written: every action and error code, with its position.
	Entries []contrlEntry `json:"entries"`
	Report  string        `json:"report"` // the CONTRL interchange, as sent
}

type contrlInterchange struct {
	Reference string `json:"reference"` // UNB 0020
	Sender    string `json:"sender"`
	Recipient string `json:"recipient"`
	SyntaxID  string `json:"syntax_id"`
}

// contrlError is the fault: 0085 code and where (segment in its message,
// UNH = 1; element and component as CONTRL counts them; 0-based byte offset).
type contrlError struct {
	Code       int    `json:"code"`
	Message    string `json:"message"`
	Offset     int64  `json:"offset"`
	Segment    int    `json:"segment,omitempty"`
	Tag        string `json:"tag,omitempty"`
	Element    int    `json:"element,omitempty"`
	Component  int    `json:"component,omitempty"`
	MessageRef string `json:"message_ref,omitempty"`
}

type contrlMessageRef struct {
	Ref     string `json:"ref"`
	Type    string `json:"type"`
	Version string `json:"version"`
	Release string `json:"release"`
	Agency  string `json:"agency"`
}

// contrlEntry is one UCI, UCF, UCM, UCS or UCD of a CONTRL: Ref is what
// it answers (UCI: the interchange's 0020, UCF: the group's 0048, UCM: the
// message's 0062; UCS and UCD: the message they are in), Action its 0083,
// Code its 0085. The position: for UCI, UCF and UCM the service segment at
// fault (0013, FaultTag) and its element and component (S011); for UCS
// the segment position in the message (0096, UNH = 1) and, from the
// check, the tag of that segment; for UCD the segment of its UCS and the
// element and component (S011). Offset (0-based byte in the interchange)
// and Reason come from the check where it names the fault.
type contrlEntry struct {
	Tag       string `json:"tag"`
	Ref       string `json:"ref,omitempty"`
	Action    string `json:"action,omitempty"`
	Code      int    `json:"code,omitempty"`
	FaultTag  string `json:"fault_tag,omitempty"`
	Segment   int    `json:"segment,omitempty"`
	Element   int    `json:"element,omitempty"`
	Component int    `json:"component,omitempty"`
	Offset    *int64 `json:"offset,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

func newContrlJSON(rc *replyCheck, text string) contrlJSON {
	rep := rc.contrl
	out := contrlJSON{File: rc.file, Mode: string(rc.mode), Action: edifact.ActionAcknowledged, Messages: []contrlMessageRef{},
		Entries: contrlEntries(rep, text), Report: text}
	if ic := rep.Interchange; ic != nil {
		out.Interchange = contrlInterchange{ic.Reference, ic.Sender, ic.Recipient, ic.SyntaxID}
	}
	if e := rep.Err; e != nil {
		out.Action = edifact.ActionRejected
		out.Error = &contrlError{Code: e.Code, Message: e.Error(), Offset: e.Offset, Segment: e.Segment, Tag: e.Tag, Element: e.Element,
			Component: e.Component, MessageRef: e.Message}
	}
	for _, en := range out.Entries {
		if en.Action == edifact.ActionRejected {
			out.Rejected = true
		}
	}
	out.Rejected = out.Rejected || rep.Err != nil || len(rep.Faults) > 0
	for _, m := range rep.Messages {
		out.Messages = append(out.Messages, contrlMessageRef{m.Ref, m.Type, m.Version, m.Release, m.Agency})
	}
	return out
}

// contrlEntries reads the CONTRL text back and lists its UCI, UCF, UCM,
// UCS and UCD, with the byte offset and reason of each fault the report
// names.
func contrlEntries(rep edifact.ContrlReport, text string) []contrlEntry {
	out := []contrlEntry{}
	var msgs []*edifact.Message
	_, err := edifact.Parse(strings.NewReader(text), edifact.Limits{}, func(m *edifact.Message) error {
		msgs = append(msgs, m.Clone())
		return nil
	})
	if err != nil || len(msgs) != 1 {
		return out
	}
	num := func(s string) int {
		n, _ := strconv.Atoi(s)
		return n
	}
	// faultsOf is what the report names at fault in the message with ref.
	faultsOf := func(ref string) []*edifact.SyntaxError {
		for _, m := range rep.Messages {
			if m.Ref == ref {
				if fs, ok := rep.Faults[m.Number]; ok {
					return fs
				}
			}
		}
		if rep.Err != nil && rep.Err.Message == ref {
			return []*edifact.SyntaxError{rep.Err}
		}
		return nil
	}
	with := func(en *contrlEntry, f *edifact.SyntaxError) {
		if f == nil {
			return
		}
		off := f.Offset
		en.Offset = &off
		if f.Err != nil {
			en.Reason = f.Err.Error()
		}
	}
	msgRef, seg := "", 0
	for _, s := range msgs[0].All() {
		switch s.Tag {
		case "UCI", "UCF":
			en := contrlEntry{Tag: s.Tag, Ref: s.Value(1, 1), Action: s.Value(4, 1), Code: num(s.Value(5, 1)), FaultTag: s.Value(6, 1),
				Element: num(s.Value(7, 1)), Component: num(s.Value(7, 2))}
			if en.Code != 0 {
				with(&en, rep.Err)
			}
			out = append(out, en)
		case "UCM":
			msgRef, seg = s.Value(1, 1), 0
			en := contrlEntry{Tag: s.Tag, Ref: msgRef, Action: s.Value(3, 1), Code: num(s.Value(4, 1)), FaultTag: s.Value(5, 1),
				Element: num(s.Value(6, 1)), Component: num(s.Value(6, 2))}
			if en.Code != 0 {
				for _, f := range faultsOf(msgRef) {
					if f.Tag == en.FaultTag {
						with(&en, f)
						break
					}
				}
			}
			out = append(out, en)
		case "UCS":
			seg = num(s.Value(1, 1))
			en := contrlEntry{Tag: s.Tag, Ref: msgRef, Segment: seg, Code: num(s.Value(2, 1))}
			for _, f := range faultsOf(msgRef) {
				if max(f.Segment, 1) == seg {
					en.FaultTag = f.Tag
					if f.Element == 0 {
						with(&en, f)
					}
					break
				}
			}
			out = append(out, en)
		case "UCD":
			en := contrlEntry{Tag: s.Tag, Ref: msgRef, Segment: seg, Code: num(s.Value(1, 1)), Element: num(s.Value(2, 1)), Component: num(s.Value(2, 2))}
			for _, f := range faultsOf(msgRef) {
				if max(f.Segment, 1) == seg && f.Element == en.Element && f.Component == en.Component && f.Code == en.Code {
					en.FaultTag = f.Tag
					with(&en, f)
					break
				}
			}
			out = append(out, en)
		}
	}
	return out
}

// aperakJSON is lazaret aperak --json.
type aperakJSON struct {
	File string `json:"file"`
	Mode string `json:"mode"` // the sender's reply mode
	// Rejected: the APERAK rejects at least one message.
	Rejected bool `json:"rejected"`
	// InterchangeRejected: the interchange was rejected whole (its CONTRL
	// answers it; no APERAK).
	InterchangeRejected bool              `json:"interchange_rejected"`
	Interchange         contrlInterchange `json:"interchange"`
	Messages            []aperakMessage   `json:"messages"`
	// Note says why there is no APERAK, when there is none.
	Note   string `json:"note,omitempty"`
	Report string `json:"report"` // the APERAK interchange, as sent ("" for none)
}

// aperakMessage is one message an APERAK rejects: its UNH reference, type,
// number in the interchange (1-based) and UNH byte offset, and its errors.
type aperakMessage struct {
	Ref    string        `json:"ref"`
	Type   string        `json:"type"`
	Number int           `json:"number"`
	Offset int64         `json:"offset"`
	Errors []aperakError `json:"errors"`
}

// aperakError is one ERC: the application error code (9321), the rule
// that failed, and where (segment in its message, UNH = 1; element and
// component, 0 = whole; 0-based byte offset in the interchange).
type aperakError struct {
	Code      string `json:"code"`
	Rule      string `json:"rule,omitempty"`
	Segment   int    `json:"segment"`
	Tag       string `json:"tag,omitempty"`
	Element   int    `json:"element,omitempty"`
	Component int    `json:"component,omitempty"`
	Offset    int64  `json:"offset"`
	Text      string `json:"text"`
}

func newAperakJSON(rc *replyCheck, text, note string) aperakJSON {
	rep := rc.aperak
	out := aperakJSON{File: rc.file, Mode: string(rc.mode), Rejected: len(rep.Messages) > 0, InterchangeRejected: rc.rejected,
		Messages: []aperakMessage{}, Note: note, Report: text}
	if ic := rep.Interchange; ic != nil {
		out.Interchange = contrlInterchange{ic.Reference, ic.Sender, ic.Recipient, ic.SyntaxID}
	}
	for _, m := range rep.Messages {
		am := aperakMessage{Ref: m.Ref, Type: m.Type, Number: m.Number, Offset: m.Offset, Errors: []aperakError{}}
		for _, e := range m.Errors {
			am.Errors = append(am.Errors, aperakError{Code: e.Code, Rule: e.Rule, Segment: e.Segment, Tag: e.Tag, Element: e.Element,
				Component: e.Component, Offset: e.Offset, Text: e.Text})
		}
		out.Messages = append(out.Messages, am)
	}
	return out
}
