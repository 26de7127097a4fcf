package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// sentinelMaster is the name the sentinels monitor the primary under.
const sentinelMaster = "lazaret-faults"

// Sentinel timings: a primary that does not answer for 1 s is subjectively
// down; a failover that has not ended after 2 s may be retried (by the same
// sentinel only after 4 s: twice the timeout).
const (
	sentinelDownAfter = 1000 * time.Millisecond
	sentinelFailover  = 2000 * time.Millisecond
)

// sentinelSet is the Sentinel scenario's Redis: a primary, one replica
// (--replicaof) and three sentinels (redis-server --sentinel, quorum 2),
// each on a free loopback port with a folder of its own. Which data node is
// the primary changes with every failover: ask primary().
type sentinelSet struct {
	nodes     []*redisServer // [0] starts as the primary, [1] as its replica
	sentinels []*proc
	ports     []int // the sentinels'
	dir       string
}

// startSentinelSet starts the primary, its replica once the primary
// answers, and the sentinels once the replica is in sync; it returns when
// every sentinel knows the replica and the other two sentinels (SENTINEL
// CKQUORUM). On error everything it started is stopped.
func startSentinelSet(bin, dir string, aof bool) (_ *sentinelSet, err error) {
	s := &sentinelSet{dir: dir}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	for i := range 2 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		d := filepath.Join(dir, fmt.Sprintf("redis-%d", i+1))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		n := &redisServer{bin: bin, port: port, dir: d, aof: aof}
		if i > 0 {
			n.replicaOf = s.nodes[0].addr()
		}
		s.nodes = append(s.nodes, n)
		if err := n.start(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitReplica(ctx, s.nodes[1].addr(), s.nodes[0].addr()); err != nil {
		return nil, err
	}
	for i := range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		d := filepath.Join(dir, fmt.Sprintf("sentinel-%d", i+1))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		// The sentinel rewrites its file (state, epochs, the others it
		// found): one file each, in its own folder.
		conf := filepath.Join(d, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode yes\ndaemonize no\nlogfile \"\"\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s %d\n"+
			"sentinel failover-timeout %s %d\nsentinel parallel-syncs %s 1\n",
			port, d, sentinelMaster, s.nodes[0].port, sentinelMaster, sentinelDownAfter.Milliseconds(),
			sentinelMaster, sentinelFailover.Milliseconds(), sentinelMaster)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, err
		}
		p, err := startProc(fmt.Sprintf("sentinel-%d", i+1), filepath.Join(d, "sentinel.log"), childEnv(), bin, conf, "--sentinel")
		if err != nil {
			return nil, err
		}
		s.sentinels = append(s.sentinels, p)
		s.ports = append(s.ports, port)
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// waitReady waits until every sentinel names the same primary, knows a
// replica of it and sees a quorum.
func (s *sentinelSet) waitReady(ctx context.Context) error {
	var last error
	for {
		last = nil
		var prim string
		for i, port := range s.ports {
			c := s.client(port)
			addr, err := c.GetMasterAddrByName(ctx, sentinelMaster).Result()
			if err == nil && len(addr) == 2 {
				a := net.JoinHostPort(addr[0], addr[1])
				if prim != "" && a != prim {
					err = fmt.Errorf("names %s, another names %s", a, prim)
				}
				prim = a
			}
			if err == nil {
				var reps []map[string]string
				if reps, err = c.Replicas(ctx, sentinelMaster).Result(); err == nil && len(reps) == 0 {
					err = errors.New("knows no replica yet")
				}
			}
			if err == nil {
				err = c.CkQuorum(ctx, sentinelMaster).Err()
			}
			c.Close()
			if err != nil {
				last = fmt.Errorf("sentinel-%d: %w", i+1, err)
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinels not ready: %w (%v)", last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *sentinelSet) client(port int) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
}

func (s *sentinelSet) addrs() []string {
	var out []string
	for _, p := range s.ports {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", p))
	}
	return out
}

// url is what the workers and submitters are given: every sentinel, the
// master's name.
func (s *sentinelSet) url() string {
	return "redis-sentinel://" + strings.Join(s.addrs(), ",") + "?master=" + sentinelMaster
}

// connOpt is the harness's own way to the broker (its Inspector): through
// the sentinels too, so that it follows the primary.
func (s *sentinelSet) connOpt() asynq.RedisConnOpt {
	return asynq.RedisFailoverClientOpt{MasterName: sentinelMaster, SentinelAddrs: s.addrs(), DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second}
}

// primary is the primary's address as most sentinels name it (2 of 3).
func (s *sentinelSet) primary(ctx context.Context) (string, error) {
	votes := map[string]int{}
	var errs []error
	for i, port := range s.ports {
		c := s.client(port)
		addr, err := c.GetMasterAddrByName(ctx, sentinelMaster).Result()
		c.Close()
		if err != nil || len(addr) != 2 {
			errs = append(errs, fmt.Errorf("sentinel-%d: %v", i+1, err))
			continue
		}
		a := net.JoinHostPort(addr[0], addr[1])
		votes[a]++
		if votes[a] >= 2 {
			return a, nil
		}
	}
	return "", fmt.Errorf("no primary named by 2 of 3 sentinels (%v): %w", votes, errors.Join(errs...))
}

// waitPrimary waits until the sentinels name a primary other than old.
func (s *sentinelSet) waitPrimary(ctx context.Context, old string) (string, error) {
	for {
		p, err := s.primary(ctx)
		if err == nil && p != old {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the sentinels still name %s: %v", old, errors.Join(ctx.Err(), err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *sentinelSet) node(addr string) *redisServer {
	for _, n := range s.nodes {
		if n.addr() == addr {
			return n
		}
	}
	return nil
}

// stop kills every process of the set, sentinels first (so that none of
// them fails over to a data node about to go).
func (s *sentinelSet) stop() {
	for _, p := range s.sentinels {
		p.kill()
	}
	for _, n := range s.nodes {
		n.crash()
	}
}

// waitReplica waits until the server at addr is a replica of primary whose
// link is up and whose initial sync is done.
func waitReplica(ctx context.Context, addr, primary string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	defer c.Close()
	host, port, _ := net.SplitHostPort(primary)
	var last string
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil {
			f := infoFields(info)
			if f["role"] == "slave" && f["master_host"] == host && f["master_port"] == port && f["master_link_status"] == "up" && f["master_sync_in_progress"] == "0" {
				return nil
			}
			last = fmt.Sprintf("role %s, master %s:%s, link %s", f["role"], f["master_host"], f["master_port"], f["master_link_status"])
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is not an in-sync replica of %s: %s (%v)", addr, primary, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// sentinelFaults is the Sentinel scenario: mid-batch a SENTINEL FAILOVER
// (the replica promoted, the old primary made its replica by the
// sentinels), and later, once that replica is in sync, kill -9 of the
// current primary: the sentinels find it down after 1 s and promote the
// replica; the killed node is restarted (AOF) as a replica of the new
// primary, as a supervisor reading the sentinels would. Replication is
// asynchronous: what the killed primary acknowledged and had not sent on
// is gone, and so is what the old primary took between the promotion and
// its reconfiguration. The ledger must not lose any of it.
func sentinelFaults(r *run) error {
	if err := startWorkers(r, 3); err != nil {
		return err
	}
	s := r.sentinels
	// The sentinels make the old primary a replica only 10 s after the
	// failover (and its full sync follows): the kill waits for that, so
	// that there is a replica to promote, and the window leaves room for
	// it to land on its burst.
	window := max(30*time.Second, faultWindow(r.h.cfg.items))
	var failedOver time.Time
	done := make(chan struct{}) // the failover's fault is over: failedOver is set, or it failed
	failover := func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		q, _ := r.ingestInfo()
		old, err := s.primary(ctx)
		if err != nil {
			r.note("FAULT SENTINEL FAILOVER not sent: %v", err)
			r.addExtra("sentinel fault did not work as planned", err.Error())
			return
		}
		c := s.client(s.ports[0])
		err = c.Failover(ctx, sentinelMaster).Err()
		c.Close()
		r.fault()
		if err != nil {
			r.note("FAULT SENTINEL FAILOVER %s: %v", sentinelMaster, err)
			r.addExtra("sentinel fault did not work as planned", "SENTINEL FAILOVER: "+err.Error())
			return
		}
		t0 := time.Now()
		r.note("FAULT SENTINEL FAILOVER %s sent to sentinel-1 (primary %s; ingest before: %s)", sentinelMaster, old, q)
		now, err := s.waitPrimary(ctx, old)
		if err != nil {
			r.note("failover did not happen: %v", err)
			r.addExtra("sentinel fault did not work as planned", err.Error())
			return
		}
		r.fault()
		failedOver = time.Now()
		r.note("sentinels name %s the primary after %s", now, time.Since(t0).Round(time.Millisecond))
		if err := waitReplica(ctx, old, now); err != nil {
			r.note("the old primary: %v", err)
			return
		}
		r.note("old primary %s is an in-sync replica of %s after %s", old, now, time.Since(t0).Round(time.Millisecond))
	}
	kill := func() {
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		old, err := s.primary(ctx)
		if err != nil {
			r.note("FAULT kill -9 of the primary not done: %v", err)
			r.addExtra("sentinel fault did not work as planned", err.Error())
			return
		}
		var rep string
		for _, n := range s.nodes {
			if n.addr() != old {
				rep = n.addr()
			}
		}
		// Only an in-sync replica can be promoted, and a sentinel that
		// led the last failover waits twice the failover timeout before it
		// leads another.
		if err := waitReplica(ctx, rep, old); err != nil {
			r.note("FAULT kill -9 with no in-sync replica: %v", err)
		}
		if d := time.Until(failedOver.Add(2 * sentinelFailover)); d > 0 {
			time.Sleep(d)
		}
		q, _ := r.ingestInfo()
		n := s.node(old)
		n.crash()
		r.fault()
		t0 := time.Now()
		r.note("FAULT primary %s killed -9 (replica %s; ingest before: %s)", old, rep, q)
		now, err := s.waitPrimary(ctx, old)
		if err != nil {
			r.note("no failover after the kill: %v; restarting %s as it was", err, old)
			r.addExtra("sentinel fault did not work as planned", err.Error())
			if err := n.start(); err != nil {
				r.note("%s did not come back: %v", old, err)
			}
			return
		}
		r.fault()
		r.note("sentinels name %s the primary %s after the kill", now, time.Since(t0).Round(time.Millisecond))
		n.replicaOf = now
		if err := n.start(); err != nil {
			r.note("%s did not come back: %v", old, err)
			return
		}
		if err := waitReplica(ctx, old, now); err != nil {
			r.note("the killed primary after its restart: %v", err)
			return
		}
		r.fault()
		r.note("killed primary %s restarted (AOF) as an in-sync replica of %s, %s after the kill", old, now, time.Since(t0).Round(time.Millisecond))
	}
	return r.drive(window, []fault{{at: window / 5, fire: failover}, {at: window * 7 / 10, fire: kill}})
}

// String is how the timeline names the run's Redis.
func (s *sentinelSet) String() string {
	var ns []string
	for _, n := range s.nodes {
		ns = append(ns, strconv.Itoa(n.port))
	}
	return fmt.Sprintf("sentinels %s, data nodes %s (master %s)", strings.Join(s.addrs(), ","), strings.Join(ns, ","), sentinelMaster)
}
