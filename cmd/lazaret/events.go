package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/premis"
)

// declareEvents declares lazaret events export|ls.
func declareEvents(sub string) declaration {
	return func(fs *pflag.FlagSet, _ *Config) ([]string, action) {
		object := fs.String("object", "", "only this object `ID`")
		batch := fs.String("batch", "", "only this batch `ID`")
		correlation := fs.String("correlation", "", "only this correlation `ID` (one item's history)")
		var since, until timeFlag
		fs.Var(&since, "since", "only events at or after `TIME`: RFC 3339, a date, or a duration back from now (24h, 7d)")
		fs.Var(&until, "until", "only events before `TIME` (same forms as --since)")
		switch sub {
		case "export":
			format := fs.String("format", "premis-xml", "output `FORMAT`: premis-xml, or mets (PREMIS wrapped as Archivematica's METS holds it; needs --organisation)")
			out := fs.StringP("o", "o", "", "write to this `FILE` instead of standard output")
			org := fs.String("organisation", "", "the `ORGANISATION` running lazaret: exported as an agent every event links")
			am := fs.Bool("archivematica", false, "shape the document for Archivematica's metadata/premis.xml import (docs/archivematica.md)")
			transfer := fs.String("transfer", "", "export only the files the Archivematica transfer `DIR` holds in DIR/objects/ (as Lazaret read them, by SHA-256), saying which items it leaves out and why; implies --archivematica")
			unverified := fs.Bool("unverified", false, "export a ledger that does not verify anyway, marked so in the document")
			return []string{"ledger", "checkpoint"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
				switch *format {
				case "premis-xml":
				case "mets":
					if *org == "" {
						// Archivematica's METS names three agents for every file:
						// the software, the organisation and the person.
						return usageErr("events export: --format mets needs --organisation (the organisation is one of the three agents of each file in Archivematica's METS)")
					}
				default:
					return usageErr("events export: --format %q: want premis-xml or mets", *format)
				}
				if len(args) > 0 {
					return usageErr("events export: unexpected arguments %q (select with --object, --batch or --correlation)", args)
				}
				l, err := cfg.openReadOnly(ctx)
				if err != nil {
					return err
				}
				defer l.Close()
				// The chain head the export was taken at, so a preservation system
				// can later check the ledger against it (lazaret ledger verify --anchor).
				opt := premis.ExportOptions{Organisation: *org, Archivematica: *am || *transfer != "", METS: *format == "mets", LedgerHead: true}
				if *transfer != "" {
					keep, closeTransfer, err := transferKeep(*transfer)
					if err != nil {
						return err
					}
					defer closeTransfer()
					opt.Keep = keep
					left := 0
					opt.LeftOut = func(q premis.KeepQuery, why string) {
						if left++; left == 1 {
							fmt.Fprintf(stderr, "left out of the export (Archivematica's import fails on a file the transfer does not hold):\n")
						}
						fmt.Fprintf(stderr, "  %s (%d events): %s\n", safeText(q.ObjectID), q.Events, safeText(why))
					}
				}
				// What leaves Lazaret stands on a verified ledger.
				problem, err := exportVerify(ctx, cfg, l)
				if err != nil {
					return err
				}
				if problem != "" {
					if !*unverified {
						return &exitError{code: 1, err: fmt.Errorf("events export: ledger %s is not intact, nothing exported (run lazaret ledger verify; --unverified exports it marked): %s", ledgerName(cfg), problem)}
					}
					fmt.Fprintf(stderr, "warning: exporting a ledger that is not intact, marked unverified: %s\n", problem)
					opt.Unverified = problem
				}
				sel := premis.Filter{ObjectID: *object, BatchID: *batch, CorrelationID: *correlation, Since: since.t, Until: until.t}
				if *out == "" {
					_, err := premis.ExportLedger(ctx, exact(stdout), l, sel, software, opt)
					return err
				}
				n, err := exportFile(ctx, *out, l, sel, opt)
				if err != nil {
					return err
				}
				fmt.Fprintf(stderr, "wrote %d events to %s\n", n, *out)
				return nil
			}
		default: // ls
			asJSON := fs.Bool("json", false, "one JSON object per event per line (a PREMIS event as the API serves it)")
			limit := fs.Int("limit", 0, "at most `N` events (0: all)")
			return []string{"ledger", "checkpoint"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
				if len(args) > 0 {
					return usageErr("events ls: unexpected arguments %q (select with --object, --batch or --correlation)", args)
				}
				l, err := cfg.openReadOnly(ctx)
				if err != nil {
					return err
				}
				defer l.Close()
				if err := warnUnverified(ctx, cfg, l, stderr); err != nil {
					return err
				}
				sel := premis.Filter{ObjectID: *object, BatchID: *batch, CorrelationID: *correlation, Since: since.t, Until: until.t, Limit: *limit}
				// A page at a time: a listing of the whole ledger holds one page.
				// The table's columns are aligned a page of rows at a time (a
				// wider cell further down widens its page only); --json is for
				// scripts.
				bw := bufio.NewWriterSize(stdout, 64<<10)
				if *asJSON {
					err := premis.EachEvent(ctx, l, sel, func(e premis.Event) error {
						e.Envelope = nil
						return writeJSON(bw, e)
					})
					if ferr := bw.Flush(); err == nil {
						err = ferr
					}
					return err
				}
				tw := tabwriter.NewWriter(bw, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tOBJECT\tTYPE\tOUTCOME\tCLASS\tDESTINATION\tCODE\tWHERE\tOFFSET\tATTEMPT")
				rows := 0
				err = premis.EachEvent(ctx, l, sel, func(e premis.Event) error {
					obj, dest, off := e.ObjectID, string(e.Destination), e.Offset
					if len(e.Members) > 0 {
						// An event of a chunk of accepted messages: the message
						// asked for, or how many it holds; an ing event of a chunk
						// accepts them.
						obj = fmt.Sprintf("%s (%d messages)", e.ObjectID, len(e.Members))
						for _, m := range e.Members {
							if m.ObjectID == *object {
								obj, off = m.ObjectID+" (member)", &m.Offset
							}
						}
						if e.Type == premis.Ingestion {
							dest = string(premis.Accepted) + " (members)"
						}
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", e.DateTime.Format("2006-01-02T15:04:05.000Z"), cell(obj), e.Type,
						e.Outcome, dash(string(e.Class)), dash(dest), dash(cell(e.Code)), position(e.Position), int64OrDash(off), e.Attempt)
					if rows++; rows%pageRows == 0 {
						return tw.Flush()
					}
					return nil
				})
				if ferr := tw.Flush(); err == nil {
					err = ferr
				}
				if ferr := bw.Flush(); err == nil {
					err = ferr
				}
				return err
			}
		}
	}
}

// pageRows is how many rows of events ls are aligned together (and held).
const pageRows = 1000

// exportFile writes the export to path. A regular file (or none) is
// written through path.partial, renamed once the document is whole: a
// failed export leaves no file that looks like one, and replaces none; a
// file replaced keeps its mode; a symbolic link is followed, as a plain
// create would. Anything else at path is never renamed over: a character
// device (/dev/null, /dev/stdout) or a FIFO is written through, as a shell's
// redirection would, and a directory, a block device or a socket is
// refused. Renaming over
// /dev/null as root replaced the device with a regular file.
func exportFile(ctx context.Context, path string, l premis.Ledger, sel premis.Filter, opt premis.ExportOptions) (int, error) {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fi = nil
	case err != nil:
		return 0, err
	case fi.IsDir():
		return 0, fmt.Errorf("%s is a directory: name a file to write the export to", path)
	case fi.Mode()&(os.ModeCharDevice|os.ModeNamedPipe) != 0:
		return exportThrough(ctx, path, l, sel, opt)
	case !fi.Mode().IsRegular():
		return 0, fmt.Errorf("%s is not a regular file, a character device or a FIFO (%s): not written", path, fi.Mode().Type())
	}
	tmp := path + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return 0, err
	}
	if fi != nil {
		if err := f.Chmod(fi.Mode().Perm()); err != nil {
			f.Close()
			os.Remove(tmp)
			return 0, err
		}
	}
	n, err := premis.ExportLedger(ctx, f, l, sel, software, opt)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return n, nil
}

// exportThrough writes the export into the device or FIFO at path, opened
// for writing as it is: never created, truncated or replaced.
func exportThrough(ctx context.Context, path string, l premis.Ledger, sel premis.Filter, opt premis.ExportOptions) (int, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	n, err := premis.ExportLedger(ctx, f, l, sel, software, opt)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// exportVerify verifies the whole ledger (against the checkpoint log when
// there is one) before an export: the first problem, or "".
func exportVerify(ctx context.Context, cfg *Config, l premis.Ledger) (string, error) {
	cp, err := cfg.checkpoints()
	if err != nil {
		return "", err
	}
	cps, err := cp.read()
	if err != nil {
		return "", err
	}
	v, err := verifyLedger(ctx, l, cps)
	if err != nil || v.Intact() {
		return "", err
	}
	return v.Problems[0].String(), nil
}

// transferKeep is an export's Keep for the Archivematica transfer at dir:
// an object is kept when dir/<originalName> (objects/<path>) is a regular
// file beneath dir and, when Lazaret computed the SHA-256 of the bytes it
// read, those are its bytes. Paths are opened beneath dir only (os.Root):
// an originalName comes from the ledger, and a transfer may hold links.
func transferKeep(dir string) (func(premis.KeepQuery) string, func(), error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("events export --transfer: %w", err)
	}
	if fi, err := root.Stat("objects"); err != nil || !fi.IsDir() {
		root.Close()
		return nil, nil, fmt.Errorf("events export --transfer %s: no objects/ folder: an Archivematica transfer holds its files in objects/", dir)
	}
	keep := func(q premis.KeepQuery) string {
		if q.OriginalName == "" {
			return "no path was recorded for it, so no file of the transfer can be matched to it"
		}
		fi, err := root.Lstat(q.OriginalName)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return q.OriginalName + " is not in the transfer"
		case err != nil:
			return q.OriginalName + ": " + err.Error()
		case !fi.Mode().IsRegular():
			return q.OriginalName + " in the transfer is not a regular file (" + fi.Mode().Type().String() + ")"
		case q.SHA256 == "":
			return ""
		}
		f, err := root.Open(q.OriginalName)
		if err != nil {
			return q.OriginalName + ": " + err.Error()
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return q.OriginalName + ": " + err.Error()
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != q.SHA256 {
			return fmt.Sprintf("%s in the transfer is not the file Lazaret read (sha256 %s, Lazaret read %s)", q.OriginalName, got, q.SHA256)
		}
		return ""
	}
	return keep, func() { root.Close() }, nil
}
