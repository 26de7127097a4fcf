package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"
)

// worker is one `lazaret worker` process of a run.
type worker struct {
	n      int
	p      *proc
	killed bool // by the harness: not a crash
}

// run is one scenario against one ledger: its own Redis, ledger, batch and
// workers, all torn down at the end.
type run struct {
	h    *harness
	sc   *scenario
	name string
	dir  string
	seed uint64
	rng  *rand.Rand

	redis     *redisServer // nil in the Sentinel scenario
	sentinels *sentinelSet // the Sentinel scenario's Redis, else nil
	led       ledgerBackend
	b         *batch
	insp      *asynq.Inspector
	env       []string
	start     time.Time

	mu          sync.Mutex
	workers     []*worker
	nWorker     int
	stopping    bool
	lastFault   time.Time
	lastKick    time.Time
	timeline    []string
	extra       map[string]int // scenario-specific findings (races)
	extraSample map[string][]string
	unsubmitted map[string]bool // object ids whose chunk never got in
	mark        int64           // ledger seq before a resubmission; -1 = none
	preLost     int             // lost or unsettled before reconcile-broker
	restoreWG   sync.WaitGroup
	cmdLog      *os.File
	superStop   chan struct{}
	superDone   chan struct{}
}

func (r *run) elapsed() string {
	return fmt.Sprintf("+%5.1fs", time.Since(r.start).Seconds())
}

// note records a line of the run's timeline (and logs it).
func (r *run) note(format string, args ...any) {
	line := r.elapsed() + " " + fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.timeline = append(r.timeline, line)
	r.mu.Unlock()
	r.h.logf("[%s] %s", r.name, line)
}

func (r *run) addExtra(kind, sample string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.extra[kind]++
	if len(r.extraSample[kind]) < 6 && sample != "" {
		r.extraSample[kind] = append(r.extraSample[kind], sample)
	}
}

func (r *run) fault() {
	r.mu.Lock()
	r.lastFault = time.Now()
	r.mu.Unlock()
}

// lazaret runs one short command against this run's Redis and ledger.
func (r *run) lazaret(timeout time.Duration, args ...string) cmdResult {
	res := runShort(context.Background(), timeout, r.env, r.h.bin, args...)
	r.mu.Lock()
	fmt.Fprintf(r.cmdLog, "%s %s\n", r.elapsed(), res)
	if s := strings.TrimSpace(res.stdout); s != "" {
		fmt.Fprintf(r.cmdLog, "  stdout: %s\n", strings.ReplaceAll(tail(s, 2000), "\n", "\n          "))
	}
	if s := strings.TrimSpace(res.stderr); s != "" {
		fmt.Fprintf(r.cmdLog, "  stderr: %s\n", strings.ReplaceAll(tail(s, 2000), "\n", "\n          "))
	}
	r.mu.Unlock()
	return res
}

// startWorker starts one more `lazaret worker`.
func (r *run) startWorker() error {
	r.mu.Lock()
	r.nWorker++
	n := r.nWorker
	r.mu.Unlock()
	args := append([]string{"worker", "--concurrency", "2"}, r.sc.workerArgs...)
	env := append(append([]string{}, r.env...), "LAZARET_LOG_LEVEL=warn")
	p, err := startProc(fmt.Sprintf("worker-%d", n), filepath.Join(r.dir, fmt.Sprintf("worker-%02d.log", n)), env, r.h.bin, args...)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.workers = append(r.workers, &worker{n: n, p: p})
	r.mu.Unlock()
	return nil
}

func (r *run) liveWorkers() []*worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*worker
	for _, w := range r.workers {
		if w.p.alive() && !w.killed {
			out = append(out, w)
		}
	}
	return out
}

// killWorker kills one live worker with SIGKILL.
func (r *run) killWorker() (int, bool) {
	live := r.liveWorkers()
	if len(live) == 0 {
		return 0, false
	}
	w := live[r.rng.IntN(len(live))]
	r.mu.Lock()
	w.killed = true
	r.mu.Unlock()
	w.p.kill()
	r.fault()
	return w.n, true
}

// supervise restarts a worker that exited by itself, as a process
// supervisor would, and says so in the timeline: a worker that exits on its
// own is a finding.
func (r *run) supervise() {
	defer close(r.superDone)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.superStop:
			return
		case <-t.C:
		}
		r.mu.Lock()
		if r.stopping {
			r.mu.Unlock()
			return
		}
		var dead []*worker
		for _, w := range r.workers {
			if !w.p.alive() && !w.killed {
				w.killed = true // handled
				dead = append(dead, w)
			}
		}
		r.mu.Unlock()
		for _, w := range dead {
			r.note("worker-%d exited by itself after %s (%v): restarted, as a supervisor would", w.n, time.Since(w.p.started).Round(time.Millisecond), w.p.err)
			r.addExtra("worker exited by itself", fmt.Sprintf("worker-%d: %v (log %s)", w.n, w.p.err, filepath.Base(r.workerLog(w.n))))
			if err := r.startWorker(); err != nil {
				r.note("could not restart a worker: %v", err)
			}
		}
	}
}

func (r *run) workerLog(n int) string { return filepath.Join(r.dir, fmt.Sprintf("worker-%02d.log", n)) }

// stopWorkers stops every worker (SIGTERM, then SIGKILL after 40 s).
func (r *run) stopWorkers() {
	r.mu.Lock()
	r.stopping = true
	ws := append([]*worker{}, r.workers...)
	r.mu.Unlock()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var forced []string
	for _, w := range ws {
		if !w.p.alive() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !w.p.stop(40 * time.Second) {
				mu.Lock()
				forced = append(forced, fmt.Sprintf("worker-%d", w.n))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(forced) > 0 {
		sort.Strings(forced)
		r.note("workers that did not stop within 40 s of SIGTERM (killed): %s", strings.Join(forced, ", "))
		r.addExtra("worker did not drain within 40 s of SIGTERM", strings.Join(forced, ", "))
	}
}

// ingest is the ingest queue's live depth.
type ingest struct{ pending, active, scheduled, retry, archived int }

func (q ingest) live() int { return q.pending + q.active + q.scheduled + q.retry }
func (q ingest) String() string {
	return fmt.Sprintf("pending %d active %d scheduled %d retry %d archived %d", q.pending, q.active, q.scheduled, q.retry, q.archived)
}

func (r *run) ingestInfo() (ingest, error) {
	info, err := r.insp.GetQueueInfo(qIngest)
	if errors.Is(err, asynq.ErrQueueNotFound) {
		return ingest{}, nil
	}
	if err != nil {
		return ingest{}, err
	}
	return ingest{info.Pending, info.Active, info.Scheduled, info.Retry, info.Archived}, nil
}

// settle waits until the ingest queue has had nothing pending, active,
// scheduled or retrying for three polls in a row, or limit passes. asynq
// hands a killed worker's tasks back only once their lease is 30 s past
// expiry, and only when a worker starts or once a minute: when tasks stay
// active 62 s after the last fault, a fresh worker is started so that its
// recoverer runs.
func (r *run) settle(label string, limit time.Duration) bool {
	t0 := time.Now()
	deadline := t0.Add(limit)
	quiet := 0
	lastLog := t0
	var info ingest
	var err error
	maxOrphans := 0
	defer func() {
		if maxOrphans > 0 {
			r.addExtra("active tasks orphaned by the fault (lease expired; back only through asynq's recoverer, ≥ 60 s later)",
				fmt.Sprintf("%s: up to %d at once", label, maxOrphans))
		}
	}()
	for {
		info, err = r.ingestInfo()
		if err == nil && info.live() == 0 {
			quiet++
			if quiet >= 3 {
				r.note("settled %s in %s (ingest: %s)", label, time.Since(t0).Round(100*time.Millisecond), info)
				return true
			}
		} else {
			quiet = 0
		}
		now := time.Now()
		orphans := 0
		if err == nil && info.active > 0 {
			orphans = r.orphans()
		}
		if orphans > maxOrphans {
			maxOrphans = orphans
			r.note("%d active task(s) orphaned (lease expired, no worker holds them)", orphans)
		}
		r.mu.Lock()
		kick := orphans > 0 && now.Sub(r.lastFault) >= 62*time.Second && now.Sub(r.lastKick) >= 61*time.Second
		if kick {
			r.lastKick = now
		}
		r.mu.Unlock()
		if kick {
			r.note("kick: %d orphaned task(s) 62 s after the last fault: starting a fresh worker so asynq's recoverer runs now", orphans)
			if err := r.startWorker(); err != nil {
				r.note("kick failed: %v", err)
			}
		}
		if now.After(deadline) {
			r.note("NOT settled %s within %s (ingest: %s, err %v)", label, limit, info, err)
			r.addExtra("did not settle in time", fmt.Sprintf("%s: ingest %s", label, info))
			return false
		}
		if now.Sub(lastLog) >= 20*time.Second {
			lastLog = now
			r.note("settling %s: ingest %s, %d live worker(s)", label, info, len(r.liveWorkers()))
		}
		time.Sleep(time.Second)
	}
}

// orphans counts active tasks whose lease has expired: no live worker
// holds them.
func (r *run) orphans() int {
	tis, err := r.insp.ListActiveTasks(qIngest, asynq.PageSize(1000))
	if err != nil {
		return 0
	}
	n := 0
	for _, ti := range tis {
		if ti.IsOrphaned {
			n++
		}
	}
	return n
}

// submit runs `lazaret submit` until it succeeds or limit passes (a
// submission is idempotent: task ids are deterministic).
func (r *run) submit(manifest string, limit time.Duration) (cmdResult, bool) {
	deadline := time.Now().Add(limit)
	args := append(append([]string{"submit"}, r.sc.submitArgs...), manifest)
	for try := 1; ; try++ {
		res := r.lazaret(90*time.Second, args...)
		if res.code == 0 {
			if try > 1 {
				r.note("submit %s went through at try %d", filepath.Base(manifest), try)
			}
			return res, true
		}
		if try == 1 {
			r.note("submit %s failed (exit %d: %s); retrying", filepath.Base(manifest), res.code, firstLine(res.stderr))
		}
		if time.Now().After(deadline) {
			r.note("submit %s still failing after %s (exit %d: %s)", filepath.Base(manifest), limit, res.code, firstLine(res.stderr))
			return res, false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// fault is one fault of a scenario's plan: fire runs at offset at, once the
// burst submitted just before it is in flight. When the burst holds a large
// sound interchange, the fault waits until that interchange is midway
// (some chunks of its messages recorded, its own outcome not yet) and then
// runs mid, or fire when mid is nil.
type fault struct {
	at   time.Duration
	fire func()
	mid  func(obj string, chunks int)
}

// midway waits (up to 10 s) until the large interchange obj is being
// routed, says so, and reports whether it caught it midway (and after how
// many chunks).
func (r *run) midway(obj string) (int, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t0 := time.Now()
	chunks, done, err := r.led.midway(ctx, r.b.id, obj, 0)
	switch {
	case err != nil:
		r.note("%s not seen midway within 10 s (%v): the fault fires anyway", obj, err)
		r.addExtra("fault meant for a large interchange midway fired without it", obj)
		return 0, false
	case done:
		r.note("%s was routed before it was seen midway (%d chunk(s), outcome recorded): the fault fires anyway", obj, chunks)
		r.addExtra("fault meant for a large interchange midway fired without it", obj)
		return chunks, false
	}
	r.note("%s midway: %d chunk(s) of its messages recorded, %s after its burst", obj, chunks, time.Since(t0).Round(time.Millisecond))
	r.addExtra("fault fired while a large interchange was midway (chunks recorded, its outcome not)", obj)
	return chunks, true
}

// midwayAgain waits (up to limit) until a redelivery of the large
// interchange obj records a chunk beyond the after it had, starting a
// fresh worker every 15 s once its task is orphaned and 45 s have passed
// since the last fault (asynq hands an orphaned task back only when its
// lease is 30 s past expiry, at a worker's start or once a minute).
func (r *run) midwayAgain(obj string, after int, limit time.Duration) (int, bool) {
	deadline := time.Now().Add(limit)
	var kicked time.Time
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		chunks, done, err := r.led.midway(ctx, r.b.id, obj, after)
		cancel()
		switch {
		case err == nil && done:
			r.note("%s: its routing ended (%d chunk(s)) before a redelivery was seen midway", obj, chunks)
			return chunks, false
		case err == nil:
			return chunks, true
		}
		r.mu.Lock()
		since := time.Since(r.lastFault)
		r.mu.Unlock()
		if since >= 45*time.Second && time.Since(kicked) >= 15*time.Second && r.orphans() > 0 {
			kicked = time.Now()
			r.note("kick: orphaned task(s) %s after the last fault: starting a fresh worker so asynq's recoverer runs now", since.Round(time.Second))
			if err := r.startWorker(); err != nil {
				r.note("kick failed: %v", err)
			}
		}
	}
	r.note("%s: no redelivery seen midway within %s", obj, limit)
	return after, false
}

// killAll kills every live worker with SIGKILL and starts n.
func (r *run) killAll(n int) []string {
	var ns []string
	for {
		k, ok := r.killWorker()
		if !ok {
			break
		}
		ns = append(ns, fmt.Sprintf("worker-%d", k))
	}
	for len(r.liveWorkers()) < n {
		if err := r.startWorker(); err != nil {
			r.note("start worker: %v", err)
			break
		}
	}
	return ns
}

// drive writes the run's batch and submits it: half of the items (none
// when there is no fault) as one burst per fault, the rest as chunks spread
// evenly over window. A fault fires as soon as its burst is in flight (the
// ingest queue has tasks pending and active: every worker is busy), or 3 s
// after the burst started, so that it lands mid-batch however fast the
// workers are. Items with a missing file are removed right after their chunk
// is in; the "late" ones come back 1.5 s later.
func (r *run) drive(window time.Duration, faults []fault) error {
	n := r.h.cfg.items
	burst := 0
	if len(faults) > 0 {
		burst = n / 2 / len(faults)
	}
	even := n - burst*len(faults)
	nEven := min(40, max(10, even/50))
	type slot struct {
		at    time.Duration
		size  int
		fault int
	}
	var slots []slot
	for j := range nEven {
		slots = append(slots, slot{window * time.Duration(j) / time.Duration(nEven), even*(j+1)/nEven - even*j/nEven, -1})
	}
	for i, f := range faults {
		slots = append(slots, slot{f.at, burst, i})
	}
	sort.SliceStable(slots, func(i, j int) bool { return slots[i].at < slots[j].at })
	sizes := make([]int, len(slots))
	var bigAt []int // the fault bursts get the large interchanges (the first chunk when there is no fault)
	for i, sl := range slots {
		sizes[i] = sl.size
		if sl.fault >= 0 && sl.size > 0 {
			bigAt = append(bigAt, i)
		}
	}
	if len(bigAt) == 0 {
		bigAt = []int{0}
	}
	b, err := newBatch(r.h.tmpl, filepath.Join(r.dir, "batch"), "faults-"+r.sc.id, sizes, r.h.cfg.seed, bigAt)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.b = b
	r.mu.Unlock()
	t0 := time.Now()
	var fw sync.WaitGroup
	for k, sl := range slots {
		time.Sleep(time.Until(t0.Add(sl.at)))
		if sl.fault < 0 || sl.size == 0 {
			r.submitChunk(k)
			if sl.fault >= 0 {
				fw.Add(1)
				go func() { defer fw.Done(); faults[sl.fault].fire() }()
			}
			continue
		}
		var sw sync.WaitGroup
		sw.Add(1)
		go func() {
			defer sw.Done()
			r.submitChunk(k)
		}()
		f := faults[sl.fault]
		if obj := b.bigSound(k); obj != "" {
			fire := f.fire
			if chunks, ok := r.midway(obj); ok && f.mid != nil {
				fire = func() { f.mid(obj, chunks) }
			}
			fw.Add(1)
			go func() { defer fw.Done(); fire() }()
			sw.Wait()
			continue
		}
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if q, err := r.ingestInfo(); err == nil && q.pending > 0 && q.active > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		fw.Add(1)
		go func() { defer fw.Done(); f.fire() }()
		sw.Wait()
	}
	r.note("all %d chunk manifest(s) submitted (%d items, %d per fault burst) in %s", len(slots), n, burst, time.Since(t0).Round(100*time.Millisecond))
	fw.Wait()
	return nil
}

func (r *run) submitChunk(k int) {
	if _, ok := r.submit(r.b.chunks[k], 2*time.Minute); !ok {
		r.mu.Lock()
		for _, it := range r.b.chunkItems[k] {
			r.unsubmitted[it.ObjectID] = true
		}
		r.mu.Unlock()
		r.addExtra("chunk never submitted (its items are left out of the checks)", filepath.Base(r.b.chunks[k]))
		return
	}
	r.afterSubmit(r.b.chunkItems[k])
}

func (r *run) afterSubmit(items []*item) {
	var late []*item
	for _, it := range items {
		if it.Missing == "" {
			continue
		}
		if err := r.b.hide(it); err != nil {
			r.note("hide %s: %v", it.file, err)
		}
		if it.Missing == "late" {
			late = append(late, it)
		}
	}
	if len(late) > 0 {
		r.restoreWG.Add(1)
		time.AfterFunc(1500*time.Millisecond, func() {
			defer r.restoreWG.Done()
			for _, it := range late {
				if err := r.b.restore(it); err != nil {
					r.note("restore %s: %v", it.file, err)
				}
			}
		})
	}
}

// restoreAll puts every missing file back (before a resubmission, which
// checks that every file exists).
func (r *run) restoreAll() {
	r.restoreWG.Wait()
	if r.b == nil {
		return
	}
	for _, it := range r.b.items {
		if it.Missing != "" {
			if err := r.b.restore(it); err != nil {
				r.note("restore %s: %v", it.file, err)
			}
		}
	}
}

// restartRedis stops Redis (SIGTERM, or SIGKILL when crash), keeps it down
// for down, and starts it again on the same port and folder.
func (r *run) restartRedis(crash bool, down time.Duration) {
	q, _ := r.ingestInfo()
	if crash {
		r.redis.crash()
		r.note("FAULT redis-server killed -9 (aof %v; ingest before: %s)", r.redis.aof, q)
	} else {
		ok := r.redis.shutdown()
		r.note("FAULT redis-server stopped with SIGTERM (clean: %v; aof %v; ingest before: %s)", ok, r.redis.aof, q)
	}
	r.fault()
	time.Sleep(down)
	if err := r.redis.start(); err != nil {
		r.note("redis-server did not come back: %v", err)
		return
	}
	r.fault()
	q, _ = r.ingestInfo()
	r.note("redis-server back after %s (ingest now: %s)", down, q)
}

// cutLedger makes the ledger refuse writes for d.
func (r *run) cutLedger(d time.Duration) {
	q, _ := r.ingestInfo()
	r.note("FAULT ledger cut for %s (%s; ingest before: %s)", d, r.led.kind(), q)
	r.fault()
	how, err := r.led.cut(context.Background(), d)
	r.fault()
	if err != nil {
		r.note("ledger cut: %s: error %v", how, err)
		r.addExtra("ledger cut did not work as planned", err.Error())
		return
	}
	r.note("ledger back: %s", how)
}

// failureRef is one line of `lazaret dlq|quarantine ls --json`.
type failureRef struct {
	ID, ObjectID, BatchID string
}

// failures lists the open failures an operator sees.
func (r *run) failures(verb string) ([]failureRef, error) {
	res := r.lazaret(2*time.Minute, verb, "ls", "--json")
	if res.code != 0 {
		return nil, fmt.Errorf("%s ls: exit %d: %s", verb, res.code, firstLine(res.stderr))
	}
	var out []failureRef
	sc := bufio.NewScanner(strings.NewReader(res.stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return out, fmt.Errorf("%s ls --json: not JSON: %.200s", verb, line)
		}
		f := failureRef{ID: str(m, "id", "ID"), ObjectID: str(m, "object_id", "ObjectID"), BatchID: str(m, "batch_id", "BatchID")}
		if f.ID == "" {
			return out, fmt.Errorf("%s ls --json: no id in %.200s", verb, line)
		}
		out = append(out, f)
	}
	return out, sc.Err()
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			switch x := v.(type) {
			case string:
				return x
			case float64:
				return fmt.Sprint(int64(x))
			}
		}
	}
	return ""
}

// pool runs fn over n indexes, width at a time.
func pool(n, width int, fn func(i int)) {
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// ledgerEvents reads the ledger: directly (read-only SQL), or through
// `lazaret events ls --json` when the direct read fails (a schema change).
func (r *run) ledgerEvents() ([]ev, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	evs, err := r.led.events(ctx)
	if err == nil {
		return evs, "", nil
	}
	res := r.lazaret(3*time.Minute, "events", "ls", "--json")
	if res.code != 0 {
		return nil, "", fmt.Errorf("direct read: %v; events ls --json: exit %d: %s", err, res.code, firstLine(res.stderr))
	}
	sc := bufio.NewScanner(strings.NewReader(res.stdout))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var seq int64
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		seq++
		a := str(m, "attempt", "Attempt")
		var attempt int
		fmt.Sscan(a, &attempt)
		var members []string
		if ms, ok := m["members"].([]any); ok {
			for _, x := range ms {
				if mm, ok := x.(map[string]any); ok {
					members = append(members, str(mm, "object_id", "ObjectID"))
				}
			}
		}
		evs = append(evs, ev{Seq: seq, ID: str(m, "id", "ID"), Type: str(m, "type", "Type"), Dest: str(m, "destination", "Destination"),
			Object: str(m, "object_id", "ObjectID"), Batch: str(m, "batch_id", "BatchID"), Corr: str(m, "correlation_id", "CorrelationID"),
			Attempt: attempt, TaskID: str(m, "task_id", "TaskID"), ReplayOf: str(m, "replay_of", "ReplayOf"),
			Operator: str(m, "operator", "Operator"), Code: str(m, "code", "Code"), Class: str(m, "class", "Class"), Members: members})
	}
	return evs, fmt.Sprintf("direct read failed (%v): read through events ls --json", err), nil
}

// keys are the submitted items' keys.
func (r *run) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	if r.b == nil {
		return nil
	}
	for _, it := range r.b.items {
		if !r.unsubmitted[it.ObjectID] {
			out = append(out, itemKey(r.b.id, it.ObjectID))
		}
	}
	return out
}

// evaluateNow reads the ledger and the broker and checks them.
func (r *run) evaluateNow() (*verdict, error) {
	evs, how, err := r.ledgerEvents()
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if how != "" {
		r.note("%s", how)
	}
	tasks, err := brokerTasks(r.insp)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	expect := map[string]string{}
	ics := map[string][]string{}
	if r.b != nil {
		for _, it := range r.b.items {
			k := itemKey(r.b.id, it.ObjectID)
			expect[k] = it.Expect
			if it.IC == nil {
				continue
			}
			for i, m := range it.messages() {
				mk := itemKey(r.b.id, m)
				ics[k] = append(ics[k], mk)
				expect[mk] = it.IC.msgs[it.IC.refs[i]]
			}
		}
	}
	return evaluate(r.keys(), evs, tasks, r.mark, expect, ics), nil
}

// batchStatus is `lazaret batch status --json`: object id -> destination,
// for every item and message of the run's batch Lazaret lists.
func (r *run) batchStatus() (map[string]string, error) {
	if r.b == nil {
		return nil, errors.New("no batch")
	}
	res := r.lazaret(3*time.Minute, "batch", "status", r.b.id, "--json")
	if res.code != 0 {
		return nil, fmt.Errorf("exit %d: %s", res.code, firstLine(res.stderr))
	}
	var st struct {
		Items []struct {
			ObjectID    string `json:"object_id"`
			Destination string `json:"destination"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		return nil, fmt.Errorf("not the JSON expected: %v", err)
	}
	out := map[string]string{}
	for _, it := range st.Items {
		if _, dup := out[it.ObjectID]; dup {
			return nil, fmt.Errorf("%s listed twice", it.ObjectID)
		}
		out[it.ObjectID] = it.Destination
	}
	return out, nil
}

// maxSeq is the ledger's last sequence number.
func (r *run) maxSeq() int64 {
	evs, _, err := r.ledgerEvents()
	if err != nil {
		r.note("ledger read for the resubmission mark: %v", err)
		return 0
	}
	var m int64
	for _, e := range evs {
		m = max(m, e.Seq)
	}
	return m
}

// finish lets the run settle, runs the operator's broker reconciliation,
// lets it settle again and stops the workers, so that the checks read a
// still pipeline.
func (r *run) finish() {
	r.restoreWG.Wait()
	r.settle("after the faults", r.h.cfg.settle)
	if v, err := r.evaluateNow(); err == nil && (v.Lost > 0 || v.Unknown > 0) {
		r.preLost = v.Lost + v.Unknown
		r.note("before reconcile-broker: %d lost, %d unsettled of %d", v.Lost, v.Unknown, v.Items)
	}
	res := r.lazaret(3*time.Minute, "reconcile-broker")
	r.note("reconcile-broker: exit %d: %s", res.code, lastLine(res.stdout+"\n"+res.stderr))
	if res.code != 0 {
		r.addExtra("reconcile-broker failed", firstLine(res.stderr))
	}
	r.settle("after reconcile-broker", r.h.cfg.settle/2)
	close(r.superStop)
	<-r.superDone
	r.stopWorkers()
}

// scanLogs counts what the workers logged at error level, by message, and
// any panic or fatal line.
func (r *run) scanLogs() map[string]int {
	out := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(r.dir, "worker-*.log"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			var m map[string]any
			if json.Unmarshal(line, &m) != nil {
				s := string(line)
				if strings.HasPrefix(s, "panic:") || strings.HasPrefix(s, "fatal error:") {
					out["(stderr) "+tail(s, 120)]++
				}
				continue
			}
			// "item routed" at error level is every dead letter's normal log line.
			if lvl, _ := m["level"].(string); lvl == "ERROR" {
				if msg, _ := m["msg"].(string); msg != "item routed" {
					out[msg]++
				}
			}
		}
		fh.Close()
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
