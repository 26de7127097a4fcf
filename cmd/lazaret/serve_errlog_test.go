package main

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
