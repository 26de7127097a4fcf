package api

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// ConnLimit bounds the connections an HTTP server holds open, so that a
// flood of connections cannot take the process's file descriptors (the
// workers beside the server need them to open masters, the ledger and
// Redis). It is golang.org/x/net/netutil.LimitListener's pattern with one
// change: at the limit, a new connection evicts the connection that has
// waited longest without a request in progress (new, never sent a byte;
// or idle between keep-alive requests), and waits only while every held
// connection is serving a request. netutil's listener would leave a new
// client (a health probe, an operator) in the kernel's backlog behind
// every idle connection an attacker opened first.
//
// Wire both halves: Listener around the server's listener, and ConnState
// as the server's ConnState hook (it learns there which connections are
// serving a request).
type ConnLimit struct {
	max int

	mu      sync.Mutex
	changed *sync.Cond // a connection was released, or the listener closed
	conns   map[*limitedConn]struct{}
	closed  bool
	evicted int64
}

// NewConnLimit is a limit of n (at least 1) connections.
func NewConnLimit(n int) *ConnLimit {
	l := &ConnLimit{max: max(n, 1), conns: map[*limitedConn]struct{}{}}
	l.changed = sync.NewCond(&l.mu)
	return l
}

// Max is the limit.
func (l *ConnLimit) Max() int { return l.max }

// Open is the number of connections held now.
func (l *ConnLimit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Evicted is the number of waiting connections closed to make room.
func (l *ConnLimit) Evicted() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.evicted
}

// Listener wraps ln: its Accept holds at most Max connections open.
func (l *ConnLimit) Listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, lim: l}
}

// ConnState is the http.Server ConnState hook that tells the limit which
// connections are serving a request (never evicted) and which wait.
func (l *ConnLimit) ConnState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch s {
	case http.StateClosed:
		lc.release()
		return
	}
	l.mu.Lock()
	lc.state, lc.since = s, time.Now()
	l.mu.Unlock()
}

type limitListener struct {
	net.Listener
	lim *ConnLimit
}

// Accept takes the next connection; at the limit it closes the longest
// waiting connection to make room, or, when all are serving requests,
// waits for one to end (holding the new one: one descriptor over Max).
func (ln *limitListener) Accept() (net.Conn, error) {
	c, err := ln.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l := ln.lim
	lc := &limitedConn{Conn: c, lim: l, state: http.StateNew, since: time.Now()}
	l.mu.Lock()
	for len(l.conns) >= l.max && !l.closed {
		if victim := l.oldestWaiting(); victim != nil {
			l.evicted++
			l.drop(victim)
			l.mu.Unlock()
			victim.Conn.Close()
			l.mu.Lock()
			continue
		}
		l.changed.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		c.Close()
		return nil, net.ErrClosed
	}
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// Close closes the listener and wakes an Accept waiting for room.
func (ln *limitListener) Close() error {
	err := ln.Listener.Close()
	ln.lim.mu.Lock()
	ln.lim.closed = true
	ln.lim.changed.Broadcast()
	ln.lim.mu.Unlock()
	return err
}

// oldestWaiting is the held connection that has waited longest without
// a request in progress; nil when every one is serving. l.mu is held.
func (l *ConnLimit) oldestWaiting() *limitedConn {
	var victim *limitedConn
	for c := range l.conns {
		if c.state != http.StateNew && c.state != http.StateIdle {
			continue
		}
		if victim == nil || c.since.Before(victim.since) {
			victim = c
		}
	}
	return victim
}

// drop forgets c and wakes a waiting Accept. l.mu is held.
func (l *ConnLimit) drop(c *limitedConn) {
	if _, ok := l.conns[c]; ok {
		delete(l.conns, c)
		l.changed.Broadcast()
	}
}

// limitedConn is a connection the limit holds; its state and since are
// guarded by lim.mu.
type limitedConn struct {
	net.Conn
	lim   *ConnLimit
	state http.ConnState
	since time.Time
}

func (c *limitedConn) release() {
	c.lim.mu.Lock()
	c.lim.drop(c)
	c.lim.mu.Unlock()
}

// Close closes the connection and makes room for another.
func (c *limitedConn) Close() error {
	c.release()
	return c.Conn.Close()
}
