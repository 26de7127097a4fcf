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

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/tiff"
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
		{"tiff structure", stage(validate.StageStructure, &tiff.FormatError{Page: 3, Offset: 2916, Code: "tiff.ifd-loop", Err: tiff.ErrIFDLoop}),
			premis.Structural, premis.DeadLetter, "tiff.ifd-loop"},
		{"fixity", stage(validate.StageFixity, &validate.FixityError{Field: "sha256"}), premis.Structural, premis.DeadLetter, "fixity.sha256-mismatch"},
		{"format", stage(validate.StageFormat, &validate.FormatError{Source: "extension"}), premis.Semantic, premis.Quarantined, "format.conflict-extension"},
		{"manifest rules", stage(validate.StageRules, errors.Join(&validate.FieldError{Field: "color_profile", Rule: "required"}, &validate.FieldError{Field: "resolution_dpi", Rule: "numeric"})),
			premis.Semantic, premis.Quarantined, "manifest.color_profile.required"},
		{"policy", stage(validate.StageRules, &validate.PolicyError{Code: "policy.private-tag"}), premis.Semantic, premis.Quarantined, "policy.private-tag"},
		{"pixel budget", stage(validate.StageDecode, &tiff.LimitError{What: "pixels"}), premis.Semantic, premis.Quarantined, "limit.pixels"},
		{"file missing", stage(validate.StageOpen, &fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}), premis.Transient, premis.Retry, "io.not-found"},
		{"permission", stage(validate.StageOpen, &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}), premis.Transient, premis.Retry, "io.permission"},
		{"EMFILE", stage(validate.StageOpen, &fs.PathError{Op: "openat2", Path: "/x", Err: syscall.EMFILE}), premis.Transient, premis.Retry, "io.descriptors"},
		{"ENFILE", stage(validate.StageOpen, &fs.PathError{Op: "open", Path: "/x", Err: syscall.ENFILE}), premis.Transient, premis.Retry, "io.descriptors"},
		{"EMFILE in a socket", fmt.Errorf("redis: %w", os.NewSyscallError("socket", syscall.EMFILE)), premis.Transient, premis.Retry, "io.descriptors"},
		{"EIO", stage(validate.StageFixity, &fs.PathError{Op: "read", Path: "/x", Err: syscall.EIO}), premis.Transient, premis.Retry, "io.unavailable"},
		{"connection refused", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, premis.Transient, premis.Retry, "io.unavailable"},
		{"timeout", fmt.Errorf("validate: %w", context.DeadlineExceeded), premis.Transient, premis.Retry, "timeout"},
		{"ledger busy", fmt.Errorf("append: %w", premis.ErrBusy), premis.Transient, premis.Retry, "ledger.busy"},
		{"file still copying", stage(validate.StageOpen, fmt.Errorf("x: %w", validate.ErrFileChanged)), premis.Transient, premis.Retry, "io.file-changed"},
		{"routing", &RoutingError{Destination: premis.Quarantined, Err: errors.New("redis down")}, premis.Transient, premis.Retry, "routing.quarantine"},
		{"canceled", fmt.Errorf("read: %w", context.Canceled), premis.Transient, premis.Retry, "canceled"},
		{"symlink", stage(validate.StageOpen, &validate.OpenError{Code: "io.symlink", Err: syscall.ELOOP}), premis.Structural, premis.DeadLetter, "io.symlink"},
		{"fifo", stage(validate.StageOpen, &validate.OpenError{Code: "file.not-regular", Err: validate.ErrNotRegular}), premis.Structural, premis.DeadLetter, "file.not-regular"},
		{"net timeout", fmt.Errorf("dial: %w", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}), premis.Transient, premis.Retry, "timeout"},
		{"edifact syntax", fmt.Errorf("interchange: %w", &edifact.SyntaxError{Offset: 311, Segment: 12, Tag: "UNT", Err: edifact.ErrCount}),
			premis.Structural, premis.DeadLetter, "edifact.count-mismatch"},
		{"edifact unsupported", fmt.Errorf("interchange: %w", &edifact.UnsupportedError{Offset: 0, What: "IATB"}), premis.Semantic, premis.Quarantined, "edifact.unsupported"},
		{"rule structural", fmt.Errorf("message 1: %w", &validate.RuleError{Tier: validate.TierStructural, Code: "edifact.bgm.missing"}),
			premis.Structural, premis.DeadLetter, "edifact.bgm.missing"},
		{"rule semantic", fmt.Errorf("message 1: %w", &validate.RuleError{Tier: validate.TierSemantic, Code: "edifact.locode.unknown"}),
			premis.Semantic, premis.Quarantined, "edifact.locode.unknown"},
		{"rule regulatory", fmt.Errorf("message 1: %w", &validate.RuleError{Tier: validate.TierRegulatory, Code: "edifact.vgm.missing"}),
			premis.Regulatory, premis.Quarantined, "edifact.vgm.missing"},
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
		d := p.Decide(tc.err, 1, 0)
		if d.Class != tc.class || d.Code != tc.code || d.Destination != tc.dest {
			t.Errorf("%s: Decide = %s/%s/%s, want %s/%s/%s", tc.name, d.Class, d.Code, d.Destination, tc.class, tc.code, tc.dest)
		}
		dest := d.Destination
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
	if got := p.RetryDelay(7, &RoutingError{Try: 1, Err: errors.New("x")}, nil); got < p.RoutingBase/2 || got > p.RoutingBase {
		t.Errorf("first routing retry waits %s, want within [%s, %s]", got, p.RoutingBase/2, p.RoutingBase)
	}
	l := Locate(&validate.StageError{Err: &tiff.FormatError{Page: 3, Offset: 77}})
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
		if got := p.route(tc.class, tc.attempt, tc.retried); got != tc.want {
			t.Errorf("Route(%s, attempt %d, retried %d) = %s, want %s", tc.class, tc.attempt, tc.retried, got, tc.want)
		}
	}
}

// TestDecideNotes: every decision says why in words, with the counts an
// operator needs.
func TestDecideNotes(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	p.Jitter = func(n int64) int64 { return n }
	timeout := fmt.Errorf("read: %w", context.DeadlineExceeded)
	cases := []struct {
		err              error
		attempt, retries int
		dest             premis.Destination
		note             string
	}{
		{timeout, 1, 0, premis.Retry, "retry 1 of 3 in 2s (backoff ceiling 2s): read: context deadline exceeded"},
		{timeout, 4, 3, premis.DeadLetter, "retries exhausted after 3 retries: read: context deadline exceeded"},
		{errors.New("x"), 5, 0, premis.AuditHold, "poison cap reached at attempt 5 (cap 5): x"},
		{&tiff.FormatError{Code: "tiff.ifd-loop"}, 1, 0, premis.DeadLetter, ""},
	}
	for _, tc := range cases {
		d := p.Decide(tc.err, tc.attempt, tc.retries)
		if d.Destination != tc.dest || d.Note != tc.note {
			t.Errorf("Decide(%v, %d, %d) = %s %q, want %s %q", tc.err, tc.attempt, tc.retries, d.Destination, d.Note, tc.dest, tc.note)
		}
		if tc.dest == premis.Retry && d.Delay != 2*time.Second {
			t.Errorf("retry delay %s, want the recorded 2s", d.Delay)
		}
	}
}

// TestBrokerRetriesReserveASlot: asynq's budget is always larger than what
// Lazaret can spend, so asynq never archives before Lazaret decided.
func TestBrokerRetriesReserveASlot(t *testing.T) {
	t.Parallel()
	for _, p := range []Policy{DefaultPolicy(), {MaxRetry: 0, RoutingBudget: 1}, {MaxRetry: 7, RoutingBudget: 3}} {
		if got, spend := p.BrokerRetries(), p.MaxRetry+p.RoutingBudget; got <= spend {
			t.Errorf("policy %+v: asynq gets %d retries, Lazaret may spend %d", p, got, spend)
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

func TestMessageObjectIDEscapesWhatATerminalWouldRun(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"1":             "inv#1",
		"ABC-123":       "inv#ABC-123",
		"a\x00b":        "inv#a%00b",
		"\x1b[2J":       "inv#%1B[2J",
		"50%#":          "inv#50%25%23",
		"caf\xc3\xa9 x": "inv#caf%C3%A9%20x",
	}
	for ref, want := range cases {
		if got := MessageObjectID("inv", ref); got != want {
			t.Errorf("MessageObjectID(inv, %q) = %q, want %q", ref, got, want)
		}
	}
}

func TestInterchangeOverItsMemoryBudgetIsQuarantined(t *testing.T) {
	t.Parallel()
	err := &validate.StageError{Stage: validate.StageOpen, Err: &validate.RuleError{Tier: validate.TierSemantic, Code: "limit.interchange-memory", Offset: 7143739, Segment: 1, Tag: "UNH"}}
	d := DefaultPolicy().Decide(err, 1, 0)
	if d.Class != premis.Semantic || d.Code != "limit.interchange-memory" || d.Destination != premis.Quarantined {
		t.Errorf("Decide = %+v", d)
	}
	if l := Locate(err); l.Offset == nil || *l.Offset != 7143739 || l.Tag != "UNH" {
		t.Errorf("Locate = %+v", l)
	}
}

// TestDecideAcceptedAllocatesNothing: every message of an interchange is
// decided, almost all with no error; deciding one allocates nothing.
func TestDecideAcceptedAllocatesNothing(t *testing.T) {
	p := DefaultPolicy()
	if n := testing.AllocsPerRun(100, func() { p.Decide(nil, 1, 0) }); n != 0 {
		t.Errorf("Decide(nil) allocates %.0f times, want 0", n)
	}
}
