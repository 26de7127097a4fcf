package main

import (
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
	cfg := defaultConfig()
	if err := cfg.bind(fs, args, "edi"); err != nil {
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
	return edifact.WriteCONTRL(stdout, rep)
}
