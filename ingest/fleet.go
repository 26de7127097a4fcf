package ingest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every worker says in Redis which registry versions it validates with,
// so that a quarantine reconciliation replays nothing that a worker still
// on the old registry would quarantine again (each such round trip spends
// an attempt towards the poison cap).

// registryKeyPrefix is where workers announce their registries:
// lazaret:registries:<worker>, one key each, expiring unless renewed.
const registryKeyPrefix = "lazaret:registries:"

// WorkerRegistries is what one live worker validates with.
type WorkerRegistries struct {
	Worker string    `json:"worker"` // host:pid
	LOCODE string    `json:"locode"`
	HS     string    `json:"hs"`
	At     time.Time `json:"at"`
}

// WorkerName is a name for a worker in the fleet: host:pid and a random
// suffix (one process may run several, as serve and its tests do).
func WorkerName() string {
	host, _ := os.Hostname()
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%x", host, os.Getpid(), b)
}

// AnnounceRegistries records that worker validates with the registry
// versions locode and hs, for ttl (renew it before then: a worker that
// stopped drops out of the fleet when its key expires).
func AnnounceRegistries(ctx context.Context, rc redis.UniversalClient, worker, locode, hs string, ttl time.Duration) error {
	b, _ := json.Marshal(WorkerRegistries{Worker: worker, LOCODE: locode, HS: hs, At: time.Now().UTC()})
	return rc.Set(ctx, registryKeyPrefix+worker, b, ttl).Err()
}

// WithdrawRegistries removes worker from the fleet (at shutdown).
func WithdrawRegistries(ctx context.Context, rc redis.UniversalClient, worker string) error {
	return rc.Del(ctx, registryKeyPrefix+worker).Err()
}

// FleetRegistries lists the live workers' announcements, by worker name.
func FleetRegistries(ctx context.Context, rc redis.UniversalClient) ([]WorkerRegistries, error) {
	var out []WorkerRegistries
	var cursor uint64
	for {
		keys, next, err := rc.Scan(ctx, cursor, registryKeyPrefix+"*", 100).Result()
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			b, err := rc.Get(ctx, k).Bytes()
			if errors.Is(err, redis.Nil) {
				continue // expired between the scan and the read
			}
			if err != nil {
				return nil, err
			}
			var w WorkerRegistries
			if json.Unmarshal(b, &w) == nil {
				out = append(out, w)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Worker < out[j].Worker })
	return out, nil
}

// FleetBehindError: live workers validate with other registry versions
// than the reconciliation loaded; replaying now would quarantine the
// messages again and spend an attempt of each.
type FleetBehindError struct {
	LOCODE, HS string // what the reconciliation loaded
	Behind     []WorkerRegistries
}

func (e *FleetBehindError) Error() string {
	var ws []string
	for _, w := range e.Behind {
		ws = append(ws, fmt.Sprintf("%s (%s, %s)", w.Worker, w.LOCODE, w.HS))
	}
	return fmt.Sprintf("%d live worker(s) validate with other registries than this reconciliation (%s, %s): %s; nothing was replayed. "+
		"Give the workers the same --locode/--hs files (they reload them every --reconcile-every), then reconcile again (or with --wait)",
		len(e.Behind), e.LOCODE, e.HS, strings.Join(ws, "; "))
}

// behind is the workers of fleet not on locode and hs.
func behind(fleet []WorkerRegistries, locode, hs string) []WorkerRegistries {
	var out []WorkerRegistries
	for _, w := range fleet {
		if w.LOCODE != locode || w.HS != hs {
			out = append(out, w)
		}
	}
	return out
}
