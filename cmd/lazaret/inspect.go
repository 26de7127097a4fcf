package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// inspectResult is one line of `lazaret inspect --json`.
type inspectResult struct {
	File     string `json:"file"`
	ObjectID string `json:"object_id,omitempty"`
	Kind     string `json:"kind"`
	Verdict  string `json:"verdict"`
	Class    string `json:"class"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Offset   *int64 `json:"offset"`
	Page     *int   `json:"page"`
	Tag      string `json:"tag,omitempty"`
	// UN/EDIFACT positions: segment in its message (UNH = 1), element and
	// component as CONTRL counts them.
	Segment    int    `json:"segment"`
	Element    int    `json:"element"`
	Component  int    `json:"component"`
	MessageRef string `json:"message_ref,omitempty"`
	// Interchange is the number of the message's interchange in its file
	// when that is not the first (a file may hold several that reuse
	// references); the row names the message file#2#ref, as its object id.
	Interchange int            `json:"interchange,omitempty"`
	MessageType string         `json:"message_type,omitempty"`
	PUID        string         `json:"puid"`
	SHA256      string         `json:"computed_sha256"` // of the bytes read; "" when not read
	Size        int64          `json:"computed_size"`
	Pages       int            `json:"pages"`
	Warnings    []tiff.Warning `json:"warnings"`
	// whole: the result is the item's (a master, or an interchange
	// refused whole), not one message's.
	whole bool
}

func declareInspect(fs *pflag.FlagSet, _ *Config) ([]string, action) {
	asJSON := fs.Bool("json", false, "one JSON object per file per line")
	batch := fs.String("batch", "", "a batch manifest: inspect its items with fixity and manifest rules")
	kind := fs.String("kind", "", "force the kind (tiff or edifact) instead of detecting it from the content")
	return []string{"master", "policy", "edi", "links"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		if len(args) == 0 && *batch == "" {
			return usageErr("inspect: name at least one FILE or --batch MANIFEST")
		}
		if _, ok := validate.KindNamed(*kind); *kind != "" && !ok {
			return usageErr("inspect: --kind %q: want %s", *kind, strings.Join(validate.KindNames(), " or "))
		}
		type job struct {
			path string
			item *validate.Item
		}
		var jobs []job
		if *batch != "" {
			m, dir, err := cfg.readManifest(*batch)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("manifest %s:\n%w", *batch, err)}
			}
			for i := range m.Items {
				it := m.Items[i]
				p, err := validate.ResolvePath(dir, it.Path)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				jobs = append(jobs, job{p, &it})
			}
		}
		for _, f := range args {
			jobs = append(jobs, job{path: f})
		}
		// The same worker execute that routes a task, minus the queue and the
		// ledger: the verdict is where a first attempt would be routed.
		w := cfg.worker(nil, nil, cfg.logger(stderr))
		// JSON lines that are printable ASCII, as nearly all are, need
		// nothing of the safeWriter beneath stdout (see termsafe.go): they
		// go to the writer beneath it, the others through safeText, a line
		// at a time (a line is whole UTF-8 and ends in a newline, so the
		// bytes are those the safeWriter would write).
		safe, bypass := stdout.(*safeWriter)
		bypass = bypass && *asJSON
		if bypass {
			stdout = rawWriter(safe)
		}
		out := bufio.NewWriterSize(stdout, 64<<10)
		defer out.Flush()
		var tw *tableWriter
		if !*asJSON {
			tw = newTableWriter(out)
			fmt.Fprintln(tw, "FILE\tVERDICT\tCLASS\tCODE\tWHERE\tOFFSET\tPUID\tMESSAGE")
		}
		var line []byte // one JSON line or table row, reused
		var jw jsonWriter
		failed, rows := 0, 0
		emit := func(r *inspectResult) error {
			if r.Verdict != string(premis.Accepted) {
				failed++
			}
			if *asJSON {
				// A line is written where out would copy it to, when there
				// is room for the common one.
				jw.dirty = false
				b := out.AvailableBuffer()
				if cap(b) < lineRoom {
					line = jw.append(line[:0], r)
					b = line
				} else {
					b = jw.append(b, r)
				}
				if bypass && jw.dirty {
					_, err := out.WriteString(safeText(string(b)))
					return err
				}
				_, err := out.Write(b)
				return err
			}
			line = r.appendRow(line[:0])
			if _, err := tw.Write(line); err != nil {
				return err
			}
			// A table holds its rows until it is flushed: an interchange of
			// any size is printed in blocks, each aligned on its own.
			if rows++; rows%tableBlock == 0 {
				return tw.Flush()
			}
			return nil
		}
		regsLoaded, regErr := false, error(nil) // registries load on the first interchange, once
		for _, j := range jobs {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			k := *kind
			if k == "" && j.item != nil {
				k = j.item.Kind
			}
			if k == "" {
				k = detectKind(j.path)
			}
			if k == "edifact" && !regsLoaded {
				regsLoaded = true
				_, regErr = w.Registries.Refresh()
			}
			var err error
			if k == "edifact" && regErr != nil {
				err = emit(&inspectResult{File: j.path, Kind: "edifact", Verdict: string(premis.Quarantined), Class: string(premis.Unknown),
					Code: "registry.unavailable", Message: regErr.Error(), Warnings: []tiff.Warning{}})
			} else {
				err = inspect(ctx, w, j.path, k, j.item, emit)
			}
			if err != nil {
				return err
			}
		}
		if tw != nil {
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if err := out.Flush(); err != nil {
			return err
		}
		if failed > 0 {
			return &exitError{code: 1}
		}
		return nil
	}
}

// lineRoom is the room a JSON line is written into out's buffer with:
// the lines of an interchange's messages take some 450 bytes.
const lineRoom = 1 << 10

// tableBlock is how many rows the text output aligns at a time.
const tableBlock = 1024

// inspect checks one file with the worker's own execute (guarded against
// panics, opened as the worker opens, decided by Policy.Decide) and emits
// one result, or for a sound interchange one per message as each is
// decided (and one more if the interchange fails on the way): nothing is
// held per message. The result emit is given, and its Offset, are reused
// for the next message: one to keep is copied with kept.
func inspect(ctx context.Context, w *ingest.Worker, path, kind string, item *validate.Item, emit func(*inspectResult) error) error {
	env := &ingest.Envelope{Kind: kind, Path: path, Attempt: 1}
	if item != nil {
		env.ObjectID, env.SHA256, env.Size, env.Item = item.ObjectID, item.SHA256, item.Size, *item
	}
	v := w.CheckStreaming(ctx, env)
	base := inspectResult{File: path, Kind: kind, Warnings: []tiff.Warning{}}
	if item != nil {
		base.ObjectID = item.ObjectID
	}
	if rep := v.Report; rep != nil {
		base.SHA256, base.Size = rep.SHA256, rep.Size
		if kind != "edifact" {
			base.PUID, base.Pages = rep.PUID, rep.Pages
			if rep.Warnings != nil {
				base.Warnings = rep.Warnings
			}
		}
	}
	n := 0
	var r inspectResult
	var off int64
	if err := v.EachMessage(ctx, func(m ingest.MessageVerdict) error {
		n++
		r = base
		r.MessageRef, r.MessageType = m.Message.Ref, m.Message.Type
		if m.Message.Interchange > 1 {
			r.Interchange = m.Message.Interchange
		}
		if m.Message.Warnings != nil {
			r.Warnings = m.Message.Warnings
		}
		r.verdict(m.Decision, m.Message.Err)
		if m.Message.Err == nil {
			off = m.Message.Offset
			r.Offset, r.Segment, r.Tag = &off, 1, "UNH"
		}
		return emit(&r)
	}); err != nil {
		return err
	}
	if n == 0 || v.Err != nil {
		r = base
		r.whole = true
		r.verdict(v.Decision, v.Err)
		return emit(&r)
	}
	return nil
}

// kept is a copy of r that stays valid after the emit call that received
// r returns (see inspect).
func (r *inspectResult) kept() inspectResult {
	c := *r
	if r.Offset != nil {
		off := *r.Offset
		c.Offset = &off
	}
	return c
}

// verdict records the decision, and the failure's message and position.
func (r *inspectResult) verdict(d ingest.Decision, err error) {
	r.Verdict = string(d.Destination)
	if err == nil {
		return
	}
	r.Class, r.Code, r.Message = string(d.Class), d.Code, err.Error()
	l := ingest.Locate(err)
	r.Offset, r.Page, r.Segment, r.Element, r.Component, r.Tag = l.Offset, l.Page, l.Segment, l.Element, l.Component, l.Tag
	if l.Message != "" {
		r.MessageRef = l.Message
	}
}

// appendRow appends r as a row of inspect's table: FILE (with the
// message's reference), VERDICT, CLASS, CODE, WHERE, OFFSET, PUID and
// MESSAGE, tab-separated, with strconv's appends rather than fmt, one
// row per message of an interchange. TestInspectRowIsFmt holds it to the
// fmt.Fprintf it replaced.
func (r *inspectResult) appendRow(b []byte) []byte {
	switch {
	case r.MessageRef != "" && r.Interchange > 1:
		b = appendCell(b, r.File, "#"+strconv.Itoa(r.Interchange)+"#", r.MessageRef)
	case r.MessageRef != "":
		b = appendCell(b, r.File, "#", r.MessageRef)
	default:
		b = append(b, cell(r.File)...)
	}
	b = append(b, '\t')
	b = append(b, r.Verdict...)
	b = append(b, '\t')
	b = append(b, dash(r.Class)...)
	b = append(b, '\t')
	b = append(b, dash(r.Code)...)
	b = append(b, '\t')
	b = appendWhere(b, r)
	b = append(b, '\t')
	if r.Offset != nil {
		b = strconv.AppendInt(b, *r.Offset, 10)
	} else {
		b = append(b, '-')
	}
	b = append(b, '\t')
	b = append(b, dash(r.PUID)...)
	b = append(b, '\t')
	if r.Message == "" && len(r.Warnings) > 0 {
		b = appendCell(b, strconv.Itoa(len(r.Warnings)), " warning(s): ", r.Warnings[0].Message)
	} else {
		b = append(b, cell(r.Message)...)
	}
	return append(b, '\n')
}

// appendCell appends cell(a + mid + c), without the concatenation when
// neither a nor c holds what cell replaces (mid never does).
func appendCell(b []byte, a, mid, c string) []byte {
	if breaksCell(a) || breaksCell(c) {
		return append(b, cell(a+mid+c)...)
	}
	b = append(b, a...)
	b = append(b, mid...)
	return append(b, c...)
}

// appendWhere appends a short human position: "page 3" or
// "seg 5 el 2:1".
func appendWhere(b []byte, r *inspectResult) []byte {
	switch {
	case r.Page != nil:
		b = append(b, "page "...)
		return strconv.AppendInt(b, int64(*r.Page), 10)
	case r.Segment > 0 && r.Element > 0:
		b = append(b, "seg "...)
		b = strconv.AppendInt(b, int64(r.Segment), 10)
		b = append(b, " el "...)
		b = strconv.AppendInt(b, int64(r.Element), 10)
		b = append(b, ':')
		return strconv.AppendInt(b, int64(r.Component), 10)
	case r.Segment > 0:
		b = append(b, "seg "...)
		return strconv.AppendInt(b, int64(r.Segment), 10)
	}
	return append(b, '-')
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func int64OrDash(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// detectKind names the kind a file's first bytes look like
// (validate.SniffKind); a file that cannot be opened is read as TIFF,
// whose checks then say why.
func detectKind(path string) string {
	f, _, err := validate.Open(validate.Source{Path: path}) // a FIFO is refused, never waited on
	if err != nil {
		return validate.KindTIFF
	}
	defer f.Close()
	head := make([]byte, validate.SniffLen)
	n, _ := io.ReadFull(f, head)
	return validate.SniffKind(head[:n])
}
