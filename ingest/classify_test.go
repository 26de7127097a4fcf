package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	stage := func(s validate.Stage, err error) error { return &validate.StageError{Stage: s, Err: err} }
	cases := []struct {
		name  string
		err   error
		class premis.Class
		dest  premis.Destination
		code  string
	}{
		{"nil", nil, "", premis.Accepted, ""},
		{"poison", fmt.Errorf("decode: %w", &PoisonError{errors.New("bad json")}), premis.Structural, premis.DeadLetter, "task.undecodable"},
		{"tiff structure", stage(validate.StageStructure, &validate.TIFFError{Page: 3, Offset: 2916, Code: "tiff.ifd-loop", Err: validate.ErrIFDLoop}),
			premis.Structural, premis.DeadLetter, "tiff.ifd-loop"},
		{"fixity", stage(validate.StageFixity, &validate.FixityError{Field: "sha256"}), premis.Structural, premis.DeadLetter, "fixity.sha256-mismatch"},
		{"format", stage(validate.StageFormat, &validate.FormatError{Source: "extension"}), premis.Semantic, premis.Quarantined, "format.conflict-extension"},
		{"manifest rules", stage(validate.StageRules, errors.Join(&validate.FieldError{Field: "color_profile", Rule: "required"}, &validate.FieldError{Field: "resolution_dpi", Rule: "numeric"})),
			premis.Semantic, premis.Quarantined, "manifest.color_profile.required"},
		{"policy", stage(validate.StageRules, &validate.PolicyError{Code: "policy.private-tag"}), premis.Semantic, premis.Quarantined, "policy.private-tag"},
		{"pixel budget", stage(validate.StageDecode, &validate.LimitError{What: "pixels"}), premis.Semantic, premis.Quarantined, "limit.pixels"},
		{"file missing", stage(validate.StageOpen, &fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}), premis.Transient, premis.Retry, "io.not-found"},
		{"permission", stage(validate.StageOpen, &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}), premis.Transient, premis.Retry, "io.permission"},
		{"EIO", stage(validate.StageFixity, &fs.PathError{Op: "read", Path: "/x", Err: syscall.EIO}), premis.Transient, premis.Retry, "io.unavailable"},
		{"connection refused", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, premis.Transient, premis.Retry, "io.unavailable"},
		{"timeout", fmt.Errorf("validate: %w", context.DeadlineExceeded), premis.Transient, premis.Retry, "timeout"},
		{"ledger busy", fmt.Errorf("append: %w", premis.ErrBusy), premis.Transient, premis.Retry, "ledger.busy"},
		{"file still copying", stage(validate.StageOpen, fmt.Errorf("x: %w", validate.ErrFileChanged)), premis.Transient, premis.Retry, "io.file-changed"},
		{"routing", &RoutingError{Destination: premis.Quarantined, Err: errors.New("redis down")}, premis.Transient, premis.Retry, "routing.quarantine"},
		{"panic", fmt.Errorf("handler: %w", &PanicError{Value: "boom"}), premis.Unknown, premis.Quarantined, "panic"},
		{"anything else", errors.New("the unexpected"), premis.Unknown, premis.Quarantined, "unclassified"},
	}
	p := DefaultPolicy()
	for _, tc := range cases {
		if got := Classify(tc.err); got != tc.class {
			t.Errorf("%s: Classify = %q, want %q", tc.name, got, tc.class)
		}
		if got := Code(tc.err); got != tc.code {
			t.Errorf("%s: Code = %q, want %q", tc.name, got, tc.code)
		}
		dest := p.Route(Classify(tc.err), 1, 0, p.MaxRetry)
		if dest != tc.dest {
			t.Errorf("%s: Route = %q, want %q", tc.name, dest, tc.dest)
		}
		// The asynq mapping of that destination.
		got := toBroker(dest, time.Second, tc.err)
		switch dest {
		case premis.Accepted, premis.Quarantined, premis.AuditHold:
			if got != nil {
				t.Errorf("%s: broker gets %v, want nil (acknowledged after hand-off)", tc.name, got)
			}
		case premis.DeadLetter:
			if !errors.Is(got, asynq.SkipRetry) {
				t.Errorf("%s: broker gets %v, want SkipRetry (archived now)", tc.name, got)
			}
		case premis.Retry:
			if got == nil || errors.Is(got, asynq.SkipRetry) || p.RetryDelay(0, got, nil) != time.Second {
				t.Errorf("%s: broker gets %v, want a retry after the recorded delay", tc.name, got)
			}
		}
	}
	if IsFailure(&RoutingError{Err: errors.New("x")}) || !IsFailure(errors.New("x")) {
		t.Error("IsFailure: routing failures must not consume the retry budget; others must")
	}
	l := Locate(&validate.StageError{Err: &validate.TIFFError{Page: 3, Offset: 77}})
	if l.Offset == nil || *l.Offset != 77 || l.Page == nil || *l.Page != 3 {
		t.Errorf("Locate = %v %v", l.Offset, l.Page)
	}
}

func TestRoute(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy() // 3 retries, cap 5
	cases := []struct {
		class            premis.Class
		attempt, retried int
		want             premis.Destination
	}{
		{premis.Transient, 1, 0, premis.Retry},
		{premis.Transient, 3, 2, premis.Retry},
		{premis.Transient, 4, 3, premis.DeadLetter}, // budget spent
		{premis.Structural, 1, 0, premis.DeadLetter},
		{premis.Semantic, 1, 0, premis.Quarantined},
		{premis.Regulatory, 2, 0, premis.Quarantined},
		{premis.Unknown, 1, 0, premis.Quarantined},
		{premis.Structural, 5, 0, premis.AuditHold}, // poison cap, any class
		{premis.Transient, 5, 1, premis.AuditHold},
		{premis.Semantic, 9, 0, premis.AuditHold},
		{"", 9, 0, premis.Accepted},
	}
	for _, tc := range cases {
		if got := p.Route(tc.class, tc.attempt, tc.retried, p.MaxRetry); got != tc.want {
			t.Errorf("Route(%s, attempt %d, retried %d) = %s, want %s", tc.class, tc.attempt, tc.retried, got, tc.want)
		}
	}
}

func TestBackoffIsExponentialWithFullJitter(t *testing.T) {
	t.Parallel()
	p := Policy{MaxRetry: 10, RetryBase: 2 * time.Second, RetryMax: 30 * time.Second, PoisonCap: 5}
	wantCeil := []time.Duration{2, 4, 8, 16, 30, 30}
	for n, w := range wantCeil {
		for i := 0; i < 200; i++ {
			d, c := p.Backoff(n)
			if c != w*time.Second {
				t.Fatalf("retry %d: ceiling %s, want %s", n, c, w*time.Second)
			}
			if d < 0 || d > c {
				t.Fatalf("retry %d: delay %s outside [0, %s]", n, d, c)
			}
		}
	}
	if _, c := p.Backoff(200); c != 30*time.Second {
		t.Errorf("huge retry count: ceiling %s", c)
	}
	p.Jitter = func(n int64) int64 { return n }
	if d, _ := p.Backoff(1); d != 4*time.Second {
		t.Errorf("max jitter: %s", d)
	}
}

func TestEnvelope(t *testing.T) {
	t.Parallel()
	env := &Envelope{V: EnvelopeVersion, CorrelationID: "c", BatchID: "b", ObjectID: "o", Kind: "tiff", Path: "/p", SHA256: "s", Attempt: 1}
	b, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEnvelope(b)
	if err != nil || got.ObjectID != "o" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	replay := *env
	replay.Attempt = 2
	if env.TaskID() == replay.TaskID() || env.TaskID() != (&Envelope{BatchID: "b", ObjectID: "o", SHA256: "s", Attempt: 1}).TaskID() {
		t.Error("task ids must be deterministic per attempt and differ across attempts")
	}
	for _, bad := range [][]byte{nil, []byte("{"), []byte(`{"v":2}`), []byte(`{"v":1,"x":1}`), make([]byte, MaxEnvelopeBytes+1)} {
		var pe *PoisonError
		if _, err := DecodeEnvelope(bad); !errors.As(err, &pe) {
			t.Errorf("%.20q: %v, want *PoisonError", bad, err)
		}
	}
	big := *env
	big.Item.ColorProfile = string(make([]byte, MaxEnvelopeBytes))
	if _, err := big.Encode(); err == nil {
		t.Error("an oversized envelope was encoded")
	}
}
