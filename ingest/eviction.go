package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ErrEvictionUnknown: Redis did not say its maxmemory-policy (CONFIG is
// disabled or renamed, as on many managed services).
var ErrEvictionUnknown = errors.New("redis maxmemory-policy could not be read")

// EvictingError: Redis may evict keys under memory pressure. asynq keeps
// a task in several keys (its record, a list or set entry, a lease); an
// evicted one loses the task silently, or leaves a record no worker takes.
// Only "noeviction" makes Redis refuse a write instead.
type EvictingError struct{ Policy string }

func (e *EvictingError) Error() string {
	return fmt.Sprintf("redis maxmemory-policy is %s: under memory pressure Redis evicts task keys and loses work silently; set maxmemory-policy noeviction", e.Policy)
}

// BrokerEviction reads Redis's maxmemory-policy: nil for noeviction, an
// *EvictingError naming any other, an error wrapping ErrEvictionUnknown
// when CONFIG GET is refused or answers nothing.
func BrokerEviction(ctx context.Context, rc redis.UniversalClient) (policy string, err error) {
	if rc == nil {
		return "", fmt.Errorf("%w: not a go-redis client", ErrEvictionUnknown)
	}
	m, err := rc.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return "", fmt.Errorf("%w: CONFIG GET: %v", ErrEvictionUnknown, err)
	}
	policy, ok := m["maxmemory-policy"]
	if !ok {
		return "", fmt.Errorf("%w: CONFIG GET maxmemory-policy answered nothing", ErrEvictionUnknown)
	}
	if policy != "noeviction" {
		return policy, &EvictingError{Policy: policy}
	}
	return policy, nil
}
