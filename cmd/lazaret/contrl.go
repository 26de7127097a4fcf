package main

import (
	"bytes"
	"context"
	"flag"
	"io"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/validate"
)

// runContrl prints the CONTRL syntax and service report Lazaret would send
// back for an interchange: rejected (action 4) with the fault's position and
// 0085 code, or acknowledged (action 7).
func runContrl(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("contrl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "one JSON object: the action, the fault and its position, the messages, and the CONTRL text")
	cfg := defaultConfig()
	if err := cfg.bind(ctx, fs, args, "edi"); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("contrl: want exactly one FILE.edi")
	}
	store := cfg.registryStore()
	if _, err := store.Refresh(); err != nil {
		return err
	}
	report, res, err := validate.CheckInterchange(ctx, fs.Arg(0), nil, store.Current(), cfg.ediRules(), "")
	var se *edifact.SyntaxError
	var re *validate.RuleError
	var stage *validate.StageError
	if err != nil && !asAny(err, &se, &re) {
		if asAny(err, &stage) && stage.Stage == validate.StageOpen {
			return &exitError{code: 1, err: err}
		}
	}
	rep := res.ContrlFor(validate.ReadEnvelope(validate.SourceOf(fs.Arg(0)), 0), err)
	rep.Reference = edifact.ControlReference(report.SHA256, fs.Arg(0)) // one per interchange, never per second
	if !*asJSON {
		return edifact.WriteCONTRL(exact(stdout), rep)
	}
	var text bytes.Buffer
	if err := edifact.WriteCONTRL(&text, rep); err != nil {
		return err
	}
	return writeJSON(stdout, newContrlJSON(fs.Arg(0), rep, text.String()))
}

// contrlJSON is lazaret contrl --json.
type contrlJSON struct {
	File        string             `json:"file"`
	Action      string             `json:"action"` // 0083: "7" acknowledged, "4" rejected
	Rejected    bool               `json:"rejected"`
	Interchange contrlInterchange  `json:"interchange"`
	Error       *contrlError       `json:"error"` // nil when acknowledged
	Messages    []contrlMessageRef `json:"messages"`
	Report      string             `json:"report"` // the CONTRL interchange, as sent
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

func newContrlJSON(file string, rep edifact.ContrlReport, text string) contrlJSON {
	out := contrlJSON{File: file, Action: edifact.ActionAcknowledged, Messages: []contrlMessageRef{}, Report: text}
	if ic := rep.Interchange; ic != nil {
		out.Interchange = contrlInterchange{ic.Reference, ic.Sender, ic.Recipient, ic.SyntaxID}
	}
	if e := rep.Err; e != nil {
		out.Action, out.Rejected = edifact.ActionRejected, true
		out.Error = &contrlError{Code: e.Code, Message: e.Error(), Offset: e.Offset, Segment: e.Segment, Tag: e.Tag, Element: e.Element,
			Component: e.Component, MessageRef: e.Message}
	}
	for _, m := range rep.Messages {
		out.Messages = append(out.Messages, contrlMessageRef{m.Ref, m.Type, m.Version, m.Release, m.Agency})
	}
	return out
}
