package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// The libraries' own log lines (go-redis's pool, asynq's processor and
// heartbeat) go through the process's slog handler, so that every line is
// JSON; while Redis is down they repeat several times a second, so each
// kind of line is written at most once per throttleEvery, with how many
// were left out since. One line at warn says when the broker went away and
// when it came back (WatchBroker).

// throttleEvery is how often one kind of repeated library line is written.
const throttleEvery = 30 * time.Second

// throttle lets one line of a kind through per period and counts the rest.
type throttle struct {
	mu    sync.Mutex
	every time.Duration
	seen  map[string]*throttled
}

type throttled struct {
	at      time.Time
	dropped int
}

func newThrottle(every time.Duration) *throttle {
	return &throttle{every: every, seen: map[string]*throttled{}}
}

// allow reports whether a line of this kind may be written now, and how
// many of its kind were dropped since the last one written.
func (t *throttle) allow(kind string, now time.Time) (bool, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.seen[kind]
	if !ok {
		if len(t.seen) > 1000 { // kinds are few; never let them grow unbounded
			clear(t.seen)
		}
		t.seen[kind] = &throttled{at: now}
		return true, 0
	}
	if now.Sub(s.at) < t.every {
		s.dropped++
		return false, 0
	}
	dropped := s.dropped
	s.at, s.dropped = now, 0
	return true, dropped
}

// lineKind is a log line with its numbers taken out: the same failure at
// another time, attempt or port is the same kind.
func lineKind(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsDigit(r) {
			return '#'
		}
		return r
	}, s)
}

// redisLogger adapts slog to go-redis's logger (redis.SetLogger).
type redisLogger struct {
	l *slog.Logger
	t *throttle
}

// NewRedisLogger is go-redis's logger writing to l, at warn, throttled.
func NewRedisLogger(l *slog.Logger) interface {
	Printf(ctx context.Context, format string, v ...any)
} {
	return redisLogger{l.With("component", "go-redis"), newThrottle(throttleEvery)}
}

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	ok, dropped := r.t.allow(lineKind(format), time.Now())
	if !ok {
		return
	}
	attrs := []slog.Attr{}
	if dropped > 0 {
		attrs = append(attrs, slog.Int("repeated", dropped))
	}
	r.l.LogAttrs(ctx, slog.LevelWarn, fmt.Sprintf(format, v...), attrs...)
}

// WatchBroker pings the broker every period until ctx ends and logs each
// change of its state once, at warn: "broker unreachable" (since when, and
// why) and "broker back" (after how long); "broker is a read-only replica"
// when the node answers as a replica (ROLE), which is what a plain
// redis:// URL leaves a worker on after a failover, with what to do; and,
// with primary (a Sentinel set's lookup), the primary's address at start
// and each time it changes. Nothing while it stays as it is.
func WatchBroker(ctx context.Context, rc redis.UniversalClient, l *slog.Logger, every time.Duration, primary func(context.Context) (string, error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	var downSince time.Time
	replica, lastPrimary := false, ""
	for {
		pctx, cancel := context.WithTimeout(ctx, every)
		err := rc.Ping(pctx).Err()
		isReplica, addr := replica, ""
		if err == nil {
			// ROLE is Redis's own answer; a server without it (the
			// embedded one) is taken for a primary. A ROLE that did not
			// answer (a slow node past the period) says nothing: the node
			// is what it last said it was.
			if v, rerr := rc.Do(pctx, "ROLE").Slice(); rerr == nil && len(v) > 0 {
				isReplica = fmt.Sprint(v[0]) == "slave"
			}
			if primary != nil {
				addr, _ = primary(pctx)
			}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && downSince.IsZero():
			downSince = time.Now()
			l.Warn("broker unreachable", slog.Time("since", downSince.UTC()), slog.String("error", err.Error()),
				slog.String("effect", "no task is taken or handed over until it is back; recorded items wait in the ledger"))
		case err == nil && !downSince.IsZero():
			l.Warn("broker back", slog.Duration("down_for", time.Since(downSince).Round(time.Second)))
			downSince = time.Time{}
		}
		if err == nil && isReplica != replica {
			replica = isReplica
			if replica {
				l.Error("broker is a read-only replica", slog.String("effect", "every write fails (READONLY): no task is taken or settled"),
					slog.String("fix", "a failover moved the primary: point --redis at the new primary and restart, or give the workers the Sentinel URL, redis-sentinel://host:port,...?master=NAME, which follows failovers"))
			} else {
				l.Warn("broker is a primary again")
			}
		}
		if addr != "" && addr != lastPrimary {
			if lastPrimary == "" {
				l.Info("broker primary", slog.String("address", addr))
			} else {
				l.Warn("broker primary changed", slog.String("address", addr), slog.String("was", lastPrimary))
			}
			lastPrimary = addr
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SentinelPrimary looks the primary of a Sentinel set up as its sentinels
// report it (the first that answers), for WatchBroker; nil for any other
// connection.
func SentinelPrimary(opt asynq.RedisConnOpt) func(context.Context) (string, error) {
	f, ok := opt.(asynq.RedisFailoverClientOpt)
	if !ok {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		var last error
		for _, a := range f.SentinelAddrs {
			sc := redis.NewSentinelClient(&redis.Options{Addr: a, Password: f.SentinelPassword, DialTimeout: time.Second})
			hp, err := sc.GetMasterAddrByName(ctx, f.MasterName).Result()
			sc.Close()
			if err == nil && len(hp) == 2 {
				return net.JoinHostPort(hp[0], hp[1]), nil
			}
			last = err
		}
		return "", last
	}
}
