package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// inspectResult is one line of `lazaret inspect --json`.
type inspectResult struct {
	File     string             `json:"file"`
	ObjectID string             `json:"object_id,omitempty"`
	Kind     string             `json:"kind"`
	Verdict  string             `json:"verdict"`
	Class    string             `json:"class"`
	Code     string             `json:"code"`
	Message  string             `json:"message"`
	Offset   *int64             `json:"offset"`
	Page     *int               `json:"page"`
	Tag      string             `json:"tag,omitempty"`
	PUID     string             `json:"puid"`
	SHA256   string             `json:"sha256"`
	Size     int64              `json:"size"`
	Pages    int                `json:"pages"`
	Warnings []validate.Warning `json:"warnings"`
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "one JSON object per file per line")
	batch := fs.String("batch", "", "a batch manifest: inspect its items with fixity and manifest rules")
	kind := fs.String("kind", "", "force the kind (tiff) instead of detecting it")
	cfg := defaultConfig()
	if err := cfg.bind(fs, args, "master", "policy", "edi"); err != nil {
		return err
	}
	if fs.NArg() == 0 && *batch == "" {
		return usageErr("inspect: name at least one FILE or --batch MANIFEST")
	}
	if *kind != "" && *kind != "tiff" {
		return usageErr("inspect: --kind %q: this build inspects tiff", *kind)
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
		fmt.Fprintln(tw, "FILE\tVERDICT\tCLASS\tCODE\tPAGE\tOFFSET\tPUID\tMESSAGE")
	}
	enc := json.NewEncoder(stdout)
	failed := 0
	for _, j := range jobs {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		r := inspectOne(ctx, j.path, j.item, policy, master)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.File, r.Verdict, dash(r.Class), dash(r.Code), intOrDash(r.Page), int64OrDash(r.Offset), dash(r.PUID), msg)
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
	rep, err := safeCheck(ctx, path, item, master)
	if rep != nil {
		r.PUID, r.SHA256, r.Size, r.Pages = rep.PUID, rep.SHA256, rep.Size, rep.Pages
		if rep.Warnings != nil {
			r.Warnings = rep.Warnings
		}
	}
	class := ingest.Classify(err)
	r.Verdict = string(policy.Route(class, 1, 0, policy.MaxRetry))
	if err != nil {
		r.Class, r.Code, r.Message = string(class), ingest.Code(err), err.Error()
		r.Offset, r.Page = ingest.Position(err)
		var te *validate.TIFFError
		if errors.As(err, &te) && te.Tag != 0 {
			r.Tag = validate.TagName(te.Tag)
		}
	}
	return r
}

// safeCheck never lets a file crash the command.
func safeCheck(ctx context.Context, path string, item *validate.Item, master validate.MasterPolicy) (rep *validate.Report, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &ingest.PanicError{Value: v}
		}
	}()
	if st, serr := os.Stat(path); serr == nil && st.IsDir() {
		return nil, &validate.StageError{Stage: validate.StageOpen, Err: &validate.TIFFError{Code: "file.not-regular", Err: fmt.Errorf("%w: a directory", validate.ErrNotRegular)}}
	}
	return validate.CheckMaster(ctx, path, item, master)
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
