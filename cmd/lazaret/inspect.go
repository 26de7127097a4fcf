package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
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
	Segment     int                `json:"segment"`
	Element     int                `json:"element"`
	Component   int                `json:"component"`
	MessageRef  string             `json:"message_ref,omitempty"`
	MessageType string             `json:"message_type,omitempty"`
	PUID        string             `json:"puid"`
	SHA256      string             `json:"sha256"`
	Size        int64              `json:"size"`
	Pages       int                `json:"pages"`
	Warnings    []validate.Warning `json:"warnings"`
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "one JSON object per file per line")
	batch := fs.String("batch", "", "a batch manifest: inspect its items with fixity and manifest rules")
	kind := fs.String("kind", "", "force the kind (tiff or edifact) instead of detecting it from the content")
	cfg := defaultConfig()
	if err := cfg.bind(fs, args, "master", "policy", "edi"); err != nil {
		return err
	}
	if fs.NArg() == 0 && *batch == "" {
		return usageErr("inspect: name at least one FILE or --batch MANIFEST")
	}
	if *kind != "" && *kind != "tiff" && *kind != "edifact" {
		return usageErr("inspect: --kind %q: want tiff or edifact", *kind)
	}
	type job struct {
		path string
		item *validate.Item
	}
	var jobs []job
	if *batch != "" {
		m, dir, err := validate.ReadManifest(*batch)
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
	for _, f := range fs.Args() {
		jobs = append(jobs, job{path: f})
	}
	policy, master := cfg.policy(), cfg.master()
	var tw *tabwriter.Writer
	if !*asJSON {
		tw = tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE\tVERDICT\tCLASS\tCODE\tWHERE\tOFFSET\tPUID\tMESSAGE")
	}
	enc := json.NewEncoder(stdout)
	failed := 0
	var regs *validate.Registries // loaded on the first interchange, once
	var regErr error
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
		var results []inspectResult
		if k == "edifact" {
			if regs == nil && regErr == nil {
				store := cfg.registryStore()
				if _, regErr = store.Refresh(); regErr == nil {
					regs = store.Current()
				}
			}
			if regErr != nil {
				results = []inspectResult{{File: j.path, Kind: "edifact", Verdict: string(premis.Quarantined), Class: string(premis.Unknown),
					Code: "registry.unavailable", Message: regErr.Error(), Warnings: []validate.Warning{}}}
			} else {
				results = inspectInterchange(ctx, j.path, j.item, policy, regs, cfg.ediRules())
			}
		} else {
			results = []inspectResult{inspectOne(ctx, j.path, j.item, policy, master)}
		}
		for _, r := range results {
			if r.Verdict != string(premis.Accepted) {
				failed++
			}
			if *asJSON {
				if err := enc.Encode(r); err != nil {
					return err
				}
				continue
			}
			msg := r.Message
			if msg == "" && len(r.Warnings) > 0 {
				msg = fmt.Sprintf("%d warning(s): %s", len(r.Warnings), r.Warnings[0].Message)
			}
			file := r.File
			if r.MessageRef != "" {
				file += "#" + r.MessageRef
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", file, r.Verdict, dash(r.Class), dash(r.Code), where(r), int64OrDash(r.Offset), dash(r.PUID), msg)
		}
	}
	if tw != nil {
		tw.Flush()
	}
	if failed > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// inspectOne validates one file as a worker would, minus the queue: the
// verdict is where a first attempt with this failure would be routed.
func inspectOne(ctx context.Context, path string, item *validate.Item, policy ingest.Policy, master validate.MasterPolicy) inspectResult {
	r := inspectResult{File: path, Kind: "tiff", Warnings: []validate.Warning{}}
	if item != nil {
		r.ObjectID = item.ObjectID
	}
	var rep *validate.Report
	err := guarded(func() (err error) {
		rep, err = validate.CheckMaster(ctx, path, item, master)
		return err
	})
	if rep != nil {
		r.PUID, r.SHA256, r.Size, r.Pages = rep.PUID, rep.SHA256, rep.Size, rep.Pages
		if rep.Warnings != nil {
			r.Warnings = rep.Warnings
		}
	}
	r.verdict(err, policy)
	return r
}

// verdict records where a first attempt failing with err would be routed,
// and the failure's class, code, message and position.
func (r *inspectResult) verdict(err error, policy ingest.Policy) {
	d := policy.Decide(err, 1, 0)
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

// guarded runs fn, turning a panic into a *ingest.PanicError: no file may
// crash the command.
func guarded(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &ingest.PanicError{Value: v}
		}
	}()
	return fn()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func intOrDash(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func int64OrDash(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// where is a short human position: "page 3" or "seg 5 el 2:1".
func where(r inspectResult) string {
	switch {
	case r.Page != nil:
		return fmt.Sprintf("page %d", *r.Page)
	case r.Segment > 0 && r.Element > 0:
		return fmt.Sprintf("seg %d el %d:%d", r.Segment, r.Element, r.Component)
	case r.Segment > 0:
		return fmt.Sprintf("seg %d", r.Segment)
	}
	return "-"
}

// detectKind tells a UN/EDIFACT interchange from anything else by its
// first bytes (after a byte-order mark and blank lines).
func detectKind(path string) string {
	f, _, err := validate.Open(validate.Source{Path: path}) // a FIFO is refused, never waited on
	if err != nil {
		return "tiff"
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	h := bytes.TrimLeft(bytes.TrimPrefix(head[:n], []byte("\xef\xbb\xbf")), " \t\r\n")
	if bytes.HasPrefix(h, []byte("UNA")) || bytes.HasPrefix(h, []byte("UNB")) || bytes.HasPrefix(h, []byte("UNH")) {
		return "edifact"
	}
	return "tiff"
}

// inspectInterchange validates an interchange as a worker would: one result
// per message, plus one for the interchange when its envelope fails.
func inspectInterchange(ctx context.Context, path string, item *validate.Item, policy ingest.Policy, regs *validate.Registries, rules validate.EDIRules) []inspectResult {
	var (
		rep *validate.Report
		res *validate.InterchangeResult
	)
	err := guarded(func() (err error) {
		rep, res, err = validate.CheckInterchange(ctx, path, item, regs, rules, "")
		return err
	})
	base := inspectResult{File: path, Kind: "edifact", Warnings: []validate.Warning{}, PUID: ""}
	if item != nil {
		base.ObjectID = item.ObjectID
	}
	if rep != nil {
		base.SHA256, base.Size = rep.SHA256, rep.Size
	}
	if err != nil || res == nil {
		r := base
		r.verdict(err, policy)
		return []inspectResult{r}
	}
	out := make([]inspectResult, 0, len(res.Messages))
	for _, m := range res.Messages {
		r := base
		r.MessageRef, r.MessageType = m.Ref, m.Type
		if m.Warnings != nil {
			r.Warnings = m.Warnings
		}
		r.verdict(m.Err, policy)
		if m.Err == nil {
			off := m.Offset
			r.Offset, r.Segment, r.Tag = &off, 1, "UNH"
		}
		out = append(out, r)
	}
	return out
}
