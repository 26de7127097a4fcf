package ingest_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
)

// logBuffer is a bytes.Buffer a logger and a test share.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWatchBrokerSaysAReplicaIsReadOnly: a worker left on a replica (a
// plain redis:// URL after a failover) is told so once, with what to do,
// and told again when the node is a primary once more; a primary is never
// called a replica.
func TestWatchBrokerSaysAReplicaIsReadOnly(t *testing.T) {
	t.Parallel()
	primary, _ := testenv.RedisServer(t)
	host, port, _ := net.SplitHostPort(primary)
	replica, _ := testenv.RedisServer(t, "--replicaof", host, port)
	watch := func(addr string) (*logBuffer, *redis.Client, context.CancelFunc) {
		var logs logBuffer
		rc := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rc.Close() })
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go ingest.WatchBroker(ctx, rc, slog.New(slog.NewJSONHandler(&logs, nil)), 50*time.Millisecond, nil)
		return &logs, rc, cancel
	}
	wait := func(logs *logBuffer, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(logs.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", want, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	onReplica, rc, _ := watch(replica)
	wait(onReplica, `"msg":"broker is a read-only replica"`)
	if !strings.Contains(onReplica.String(), "redis-sentinel://") {
		t.Errorf("the replica line does not say what to do:\n%s", onReplica)
	}
	time.Sleep(300 * time.Millisecond) // several ticks: still one line
	if n := strings.Count(onReplica.String(), "read-only replica"); n != 1 {
		t.Errorf("%d replica lines, want 1:\n%s", n, onReplica)
	}
	if err := rc.Do(context.Background(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	wait(onReplica, `"msg":"broker is a primary again"`)

	onPrimary, _, cancel := watch(primary)
	time.Sleep(300 * time.Millisecond)
	cancel()
	if strings.Contains(onPrimary.String(), "replica") {
		t.Errorf("a primary called a replica:\n%s", onPrimary)
	}
}
