package ingest_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// TestCheckStreamingFindsTheFileChanged: inspect's path through the
// worker's execute, with verdicts that do not fit in memory: the messages
// are handed over from a second read, and a file changed in between (a
// port in message 300) stops them before the last chunk (the first read's
// verdicts on the first two chunks are handed over), the verdict becoming
// transient io.file-changed, retried, as the first read's would.
func TestCheckStreamingFindsTheFileChanged(t *testing.T) {
	t.Parallel()
	var msgs []fixtures.Msg
	for i := 1; i <= 600; i++ {
		msgs = append(msgs, fixtures.IFTMIN(strconv.Itoa(i), [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130"))
	}
	var b bytes.Buffer
	if err := fixtures.WriteInterchange(&b, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "BIG", Msgs: msgs}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "big.edi")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := validate.DefaultEDIRules()
	rules.MaxRetainedBytes = 1 // nothing kept: the second read hands every verdict over
	w := &ingest.Worker{Policy: ingest.DefaultPolicy(), Software: premis.Software{Name: "lazaret", Version: "test"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), EDI: rules}
	env := &ingest.Envelope{Kind: "edifact", Path: path, Attempt: 1}
	ctx := context.Background()

	count := func(v *ingest.Verdict) int {
		n := 0
		if err := v.EachMessage(ctx, func(m ingest.MessageVerdict) error {
			if m.Destination != premis.Accepted {
				t.Errorf("message %s: %s", m.Message.Ref, m.Destination)
			}
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	v := w.CheckStreaming(ctx, env)
	if !v.PerMessage() || v.Err != nil {
		t.Fatalf("first read: %v", v.Err)
	}
	if n := count(&v); n != 600 || v.Err != nil {
		t.Fatalf("%d verdicts, %v; want 600 and no error", n, v.Err)
	}

	v = w.CheckStreaming(ctx, env)
	data := bytes.Clone(b.Bytes())
	i := bytes.Index(data, []byte("UNH+300+"))
	copy(data[i+bytes.Index(data[i:], []byte("SGSIN")):], "NLZZZ")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := count(&v); n != 512 {
		t.Errorf("%d verdicts handed over, want the first two chunks of 256", n)
	}
	if v.Class != premis.Transient || v.Code != "io.file-changed" || v.Destination != premis.Retry {
		t.Errorf("verdict %s %s %s (%v), want transient io.file-changed, retry", v.Class, v.Code, v.Destination, v.Err)
	}
}
