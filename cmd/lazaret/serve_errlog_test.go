package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/internal/testenv"
)

// TestServeErrorLogIsJSON: net/http's own error log (a handler's panic,
// accept errors) bypassed the JSON logger and wrote plain lines to
// stderr. serve's server writes it through slog: one JSON line at WARN.
func TestServeErrorLogIsJSON(t *testing.T) {
	t.Parallel()
	var logBuf syncBuffer
	log := slog.New(slog.NewJSONHandler(&logBuf, nil))
	hs, lim := httpServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), log, 4)
	if lim.Max() != 4 {
		t.Errorf("limit %d, want 4", lim.Max())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(lim.Listener(ln))
	defer hs.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	if resp, err := client.Get("http://" + ln.Addr().String() + "/"); err == nil {
		resp.Body.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logBuf.String(), "panic serving") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSpace(logBuf.String()), "\n")
	var rec struct{ Level, Msg string }
	if len(lines) == 0 || json.Unmarshal([]byte(lines[0]), &rec) != nil || rec.Level != "WARN" || !strings.Contains(rec.Msg, "http: panic serving") {
		t.Fatalf("net/http's log, want one JSON line at WARN:\n%s", logBuf.String())
	}
	// Without --max-connections: half the descriptor limit.
	if _, lim := httpServer(http.NotFoundHandler(), log, 0); lim.Max() != max(descriptorLimit()/2, 16) {
		t.Errorf("default connection limit %d, descriptor limit %d", lim.Max(), descriptorLimit())
	}
}

// TestWorkerMetricsUnderAConnectionFlood: a worker's --metrics-listen
// server held every connection opened to it, and the worker opens masters
// with the same descriptors. It now holds at most metricsConnections,
// closing the longest idle for a new one: behind 4x that many idle
// connections a scrape is answered at once.
func TestWorkerMetricsUnderAConnectionFlood(t *testing.T) {
	url := testenv.Redis(t, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Setenv("LAZARET_LOG_LEVEL", "info")
	workerLog := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"worker", "--redis", url, "--ledger", filepath.Join(t.TempDir(), "l.db"), "--metrics-listen", "127.0.0.1:0",
			"--reconcile-every", "1h"}, io.Discard, workerLog)
	}()
	defer func() { cancel(); <-done }()
	addr := waitFor(t, workerLog, regexp.MustCompile(`"msg":"worker metrics","listen":"([^"]+)"`))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 4 * metricsConnections {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("a scrape behind %d idle connections: %v", len(conns), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	// The worker closed the flood down to its limit (before, it held all
	// of them until their header timeout).
	held := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && strings.Contains(err.Error(), "timeout") {
			held++
		}
	}
	if held > metricsConnections {
		t.Errorf("the worker holds %d of %d idle connections, more than its limit of %d", held, len(conns), metricsConnections)
	}
}
