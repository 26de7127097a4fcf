package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/internal/testenv"
)

// TestWorkerWarnsOfAnEvictingRedis: a worker started against a real Redis
// whose maxmemory-policy evicts keys says so at warn, naming the policy;
// with --refuse-evicting-redis it does not start; against a Redis whose
// CONFIG command is disabled (managed Redis) it says it could not check.
// Before, nothing was said and 1,389 tasks vanished under allkeys-lru.
func TestWorkerWarnsOfAnEvictingRedis(t *testing.T) {
	t.Parallel()
	addr, _ := testenv.RedisServer(t, "--maxmemory-policy", "allkeys-lru")
	ledger := filepath.Join(t.TempDir(), "ledger.db")
	url := "redis://" + addr + "/0"

	want := func(args []string, wantMsg string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stderr syncBuffer
		done := make(chan error, 1)
		go func() { done <- run(ctx, args, &syncBuffer{}, &stderr) }()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(stderr.String(), "worker running") {
			if time.Now().After(deadline) {
				t.Fatalf("worker did not start: %s", stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		<-done
		for _, line := range strings.Split(stderr.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			if msg, _ := rec["msg"].(string); strings.Contains(msg, wantMsg) {
				if rec["level"] != "WARN" && rec["level"] != "ERROR" {
					t.Errorf("said at %v: %s", rec["level"], line)
				}
				return
			}
		}
		t.Errorf("no warning %q in:\n%s", wantMsg, stderr.String())
	}
	want([]string{"worker", "--redis", url, "--ledger", ledger}, "maxmemory-policy is allkeys-lru")

	err := run(context.Background(), []string{"worker", "--redis", url, "--ledger", ledger, "--refuse-evicting-redis"}, &syncBuffer{}, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "maxmemory-policy is allkeys-lru") {
		t.Errorf("--refuse-evicting-redis: %v", err)
	}

	managed, _ := testenv.RedisServer(t, "--rename-command", "CONFIG", "\"\"")
	want([]string{"worker", "--redis", "redis://" + managed + "/0", "--ledger", ledger}, "could not check redis's maxmemory-policy")
}
