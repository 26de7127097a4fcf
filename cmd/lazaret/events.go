package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/lazaret/lazaret/premis"
)

func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("events: want a subcommand: export or ls")
	}
	fs := flag.NewFlagSet("events "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	object := fs.String("object", "", "only this object id")
	batch := fs.String("batch", "", "only this batch id")
	correlation := fs.String("correlation", "", "only this correlation id")
	cfg := defaultConfig()
	switch args[0] {
	case "export":
		format := fs.String("format", "premis-xml", "output format: premis-xml")
		out := fs.String("o", "", "write to this file instead of standard output")
		org := fs.String("organisation", "", "the organisation running lazaret: exported as an agent every event links")
		am := fs.Bool("archivematica", false, "shape the document for Archivematica's metadata/premis.xml import (docs/archivematica.md)")
		if err := cfg.bind(fs, args[1:], "ledger"); err != nil {
			return err
		}
		if *format != "premis-xml" {
			return usageErr("events export: --format %q: want premis-xml", *format)
		}
		l, err := cfg.openExistingLedger(ctx)
		if err != nil {
			return err
		}
		defer l.Close()
		evs, err := l.Events(ctx, premis.Filter{ObjectID: *object, BatchID: *batch, CorrelationID: *correlation})
		if err != nil {
			return err
		}
		// The chain head the export was taken at, so a preservation system
		// can later check the ledger against it (lazaret ledger verify --anchor).
		opt := premis.ExportOptions{Organisation: *org, Archivematica: *am}
		if a, ok := l.(premis.Auditor); ok {
			head, has, err := a.RecordedHead(ctx)
			if err != nil {
				return err
			}
			if has {
				opt.Head = &head
			}
		}
		w := stdout
		if *out != "" {
			f, err := os.Create(*out)
			if err != nil {
				return err
			}
			defer f.Close()
			w = f
		}
		if err := premis.WriteXMLOptions(w, evs, software, opt); err != nil {
			return err
		}
		if *out != "" {
			fmt.Fprintf(stderr, "wrote %d events to %s\n", len(evs), *out)
		}
		return nil
	case "ls":
		asJSON := fs.Bool("json", false, "one JSON object per event per line")
		if err := cfg.bind(fs, args[1:], "ledger"); err != nil {
			return err
		}
		evs, err := queryEvents(ctx, &cfg, premis.Filter{ObjectID: *object, BatchID: *batch, CorrelationID: *correlation})
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			for _, e := range evs {
				e.Envelope = nil
				if err := enc.Encode(e); err != nil {
					return err
				}
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tOBJECT\tTYPE\tOUTCOME\tCLASS\tDESTINATION\tCODE\tPAGE\tOFFSET\tATTEMPT")
		for _, e := range evs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", e.DateTime.Format("2006-01-02T15:04:05.000Z"), e.ObjectID, e.Type,
				e.Outcome, dash(string(e.Class)), dash(string(e.Destination)), dash(e.Code), intOrDash(e.Page), int64OrDash(e.Offset), e.Attempt)
		}
		return tw.Flush()
	}
	return usageErr("events: unknown subcommand %q", args[0])
}

func queryEvents(ctx context.Context, cfg *Config, f premis.Filter) ([]premis.Event, error) {
	l, err := cfg.openExistingLedger(ctx)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Events(ctx, f)
}
