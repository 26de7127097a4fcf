package api_test

import (
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lazaret/lazaret/api"
)

// serveLimited serves h on a loopback listener limited to n connections.
func serveLimited(t *testing.T, n int, h http.Handler) (*api.ConnLimit, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := api.NewConnLimit(n)
	hs := &http.Server{Handler: h, ConnState: lim.ConnState, ReadHeaderTimeout: time.Minute}
	go hs.Serve(lim.Listener(ln))
	t.Cleanup(func() { hs.Close() })
	return lim, ln.Addr().String()
}

// TestConnLimitEvictsIdleConnections: a flood of connections that never
// send a request holds at most the limit, and a client that comes after
// them is answered at once (with netutil.LimitListener it would wait in
// the backlog behind every one of them until their header timeout).
func TestConnLimitEvictsIdleConnections(t *testing.T) {
	t.Parallel()
	lim, addr := serveLimited(t, 8, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	var idle []net.Conn
	for range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("a request behind 40 idle connections (limit 8): %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("answer %q", b)
	}
	if open := lim.Open(); open > 8 {
		t.Errorf("%d connections held, limit 8", open)
	}
	if ev := lim.Evicted(); ev < 32 {
		t.Errorf("%d idle connections evicted, want at least 32", ev)
	}
}

// TestConnLimitNeverEvictsARequest: connections serving a request are
// never closed to make room; a new connection waits until one ends, and
// is then served.
func TestConnLimitNeverEvictsARequest(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	lim, addr := serveLimited(t, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) error {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && string(b) != "ok" {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	var wg sync.WaitGroup
	slow := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { slow[i] = get("/slow") })
	}
	<-started
	<-started
	fast := make(chan error, 1)
	go func() { fast <- get("/fast") }()
	select {
	case err := <-fast:
		t.Fatalf("a third request was served while two held the limit of 2: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	wg.Wait()
	for i, err := range slow {
		if err != nil {
			t.Errorf("request %d in progress: %v (closed to make room?)", i, err)
		}
	}
	if err := <-fast; err != nil {
		t.Errorf("the waiting request, once room was made: %v", err)
	}
	if ev := lim.Evicted(); ev != 0 {
		t.Errorf("%d connections evicted, want 0", ev)
	}
}
