package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// scenario is one fault plan. Every run of it gets a fresh Redis, ledger,
// batch and workers.
type scenario struct {
	id, title  string
	aof        bool     // Redis persistence (appendonly yes)
	workerArgs []string // extra `lazaret worker` flags
	submitArgs []string // extra `lazaret submit` flags
	revival    bool     // the checks measure revival after a resubmission
	optIn      bool     // runs only when LAZARET_FAULTS_SCENARIOS names it
	sentinel   bool     // Redis is a primary, a replica and three sentinels (sentinelSet)
	replicated bool     // PostgreSQL only: the ledger on a primary and a replica of the run's own (replicatedLedger)
	rank       int      // expected length, for scheduling (longest first)
	body       func(r *run) error
}

func scenarios(cfg config) []*scenario {
	return []*scenario{
		{id: "1", title: fmt.Sprintf("worker kill -9 every 3 s ×%d (2–4 workers; all of them when a large interchange is midway)", cfg.kills), aof: true, rank: 9, body: workerKills},
		{id: "2a", title: "Redis restarted (SIGTERM, AOF) mid-batch", aof: true, rank: 6, body: redisFault(false, 0.4)},
		{id: "2b", title: "Redis killed -9 and restarted (AOF) mid-batch, twice", aof: true, rank: 8, body: redisFault(true, 0.3, 0.7)},
		{id: "3", title: "Redis without persistence killed -9 mid-batch", aof: false, rank: 5, body: redisFault(true, 0.5)},
		{id: "4a", title: fmt.Sprintf("ledger cut %s mid-batch (default policy)", cfg.cut), aof: true, rank: 4, body: ledgerCut},
		{id: "4b", title: fmt.Sprintf("ledger cut %s mid-batch (--max-retry 0)", cfg.cut), aof: true, rank: 4, body: ledgerCut,
			workerArgs: []string{"--max-retry", "0"}, submitArgs: []string{"--max-retry", "0"}},
		{id: "5", title: "dlq (and quarantine) replay ∥ discard of the same failure", aof: true, rank: 3, body: raceReplayDiscard},
		{id: "6", title: "resubmission after replay and after discard", aof: true, rank: 7, revival: true, body: resubmitAfterResolve},
		{id: "7", title: "large interchange killed -9 midway until its routing budget (2) is spent, then its dead letter replayed (opt-in)",
			aof: true, rank: 10, optIn: true, body: budgetSpentMidway,
			workerArgs: []string{"--routing-budget", "2"}, submitArgs: []string{"--routing-budget", "2"}},
		{id: "8", title: "Redis Sentinel: SENTINEL FAILOVER mid-batch, later the primary killed -9 (opt-in)",
			aof: true, rank: 6, optIn: true, sentinel: true, body: sentinelFaults},
		{id: "9", title: "ledger restored from a backup taken mid-batch, then `ledger recover` (opt-in)",
			aof: true, rank: 6, optIn: true, body: ledgerRestored},
		{id: "10", title: "PostgreSQL replica that lagged promoted after the primary died, then `ledger recover` (opt-in, PostgreSQL only)",
			aof: true, rank: 6, optIn: true, replicated: true, body: replicaPromoted},
	}
}

// ledgerRestored takes a backup of the ledger mid-batch (while the
// workers write), lets the batch settle, stops the workers, puts the
// backup back in place of the ledger (what a restore from a backup, or a
// promoted replica that had not received the last writes, leaves: the
// broker acted on outcomes the ledger lost, and items submitted after the
// backup are unknown to it), runs `lazaret ledger recover`, and starts the
// workers again. The harness's end (reconcile-broker, the checks) follows.
func ledgerRestored(r *run) error {
	if err := startWorkers(r, 3); err != nil {
		return err
	}
	window := faultWindow(r.h.cfg.items)
	snap := fault{at: window * 3 / 10, fire: func() {
		q, _ := r.ingestInfo()
		r.note("FAULT backup of the ledger taken (%s; ingest before: %s)", r.led.kind(), q)
		how, err := r.led.snapshot(context.Background())
		if err != nil {
			r.addExtra("ledger backup did not work as planned", err.Error())
			return
		}
		r.note("backup: %s", how)
	}}
	if err := r.drive(window, []fault{snap}); err != nil {
		return err
	}
	r.restoreWG.Wait()
	r.settle("before the restore", r.h.cfg.settle)
	r.stopWorkers()
	r.fault()
	how, err := r.led.restore(context.Background())
	r.fault()
	if err != nil {
		return fmt.Errorf("restore the ledger: %w", err)
	}
	r.note("FAULT ledger restored from the backup: %s", how)
	res := r.lazaret(5*time.Minute, "ledger", "recover")
	r.note("ledger recover: %s", lastLine(res.stdout))
	if res.code != 0 {
		r.addExtra("ledger recover failed", res.String()+": "+lastLine(res.stderr))
	}
	return startWorkers(r, 3)
}

// faultWindow is how long submission is spread over in scenarios 2–4.
func faultWindow(items int) time.Duration {
	return max(10*time.Second, time.Duration(items)*3*time.Millisecond)
}

func startWorkers(r *run, n int) error {
	for range n {
		if err := r.startWorker(); err != nil {
			return err
		}
	}
	return nil
}

// workerKills kills a random worker with SIGKILL every 3 s and keeps 2–4
// workers running.
func workerKills(r *run) error {
	if err := startWorkers(r, 3); err != nil {
		return err
	}
	kills := r.h.cfg.kills
	var faults []fault
	for k := 1; k <= kills; k++ {
		faults = append(faults, fault{at: time.Duration(k) * 3 * time.Second, mid: func(string, int) {
			// Whichever worker routes the interchange, it dies now:
			// every worker is killed, and three start.
			q, _ := r.ingestInfo()
			ns := r.killAll(3)
			r.note("FAULT %d/%d: every worker killed -9 with a large interchange midway (%s; ingest before: %s); %d running", k, kills, strings.Join(ns, ", "), q, len(r.liveWorkers()))
		}, fire: func() {
			q, _ := r.ingestInfo()
			n, ok := r.killWorker()
			if !ok {
				r.note("FAULT %d/%d: no live worker to kill", k, kills)
				return
			}
			target := 2 + r.rng.IntN(3)
			started := 0
			for len(r.liveWorkers()) < target {
				if err := r.startWorker(); err != nil {
					r.note("start worker: %v", err)
					return
				}
				started++
			}
			r.note("FAULT %d/%d: worker-%d killed -9 (ingest before: %s); %d started, %d running", k, kills, n, q, started, len(r.liveWorkers()))
		}})
	}
	return r.drive(time.Duration(kills)*3*time.Second*85/100, faults)
}

func redisFault(crash bool, at ...float64) func(r *run) error {
	return func(r *run) error {
		if err := startWorkers(r, 3); err != nil {
			return err
		}
		window := faultWindow(r.h.cfg.items)
		var faults []fault
		for _, f := range at {
			faults = append(faults, fault{at: time.Duration(float64(window) * f), fire: func() { r.restartRedis(crash, time.Second) }})
		}
		return r.drive(window, faults)
	}
}

func ledgerCut(r *run) error {
	if err := startWorkers(r, 3); err != nil {
		return err
	}
	window := faultWindow(r.h.cfg.items)
	return r.drive(window, []fault{{at: window * 4 / 10, fire: func() { r.cutLedger(r.h.cfg.cut) }}})
}

// raceReplayDiscard lets the batch settle, then for every open failure
// (dead letters, and a share of the quarantined items) runs `replay` and
// `discard` at the same moment: exactly one may win.
func raceReplayDiscard(r *run) error {
	if err := startWorkers(r, 3); err != nil {
		return err
	}
	if err := r.drive(0, nil); err != nil {
		return err
	}
	r.restoreWG.Wait()
	r.settle("before the races", r.h.cfg.settle)
	type race struct {
		verb string
		f    failureRef
	}
	var races []race
	dl, err := r.failures("dlq")
	if err != nil {
		return err
	}
	qu, err := r.failures("quarantine")
	if err != nil {
		return err
	}
	for i, f := range dl {
		if i < r.h.cfg.maxRaces {
			races = append(races, race{"dlq", f})
		}
	}
	for i, f := range qu {
		if i < r.h.cfg.maxRaces/3 {
			races = append(races, race{"quarantine", f})
		}
	}
	r.note("racing replay against discard on %d dead letter(s) (of %d) and %d quarantined item(s) (of %d)", min(len(dl), r.h.cfg.maxRaces), len(dl), len(races)-min(len(dl), r.h.cfg.maxRaces), len(qu))
	var mu sync.Mutex
	tally := map[string]int{}
	pool(len(races), 4, func(i int) {
		rc := races[i]
		var rep, dis cmdResult
		var wg sync.WaitGroup
		gate := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-gate
			rep = r.lazaret(time.Minute, rc.verb, "replay", "--operator", "faults-race", "--reason", "race: replay", rc.f.ID)
		}()
		go func() {
			defer wg.Done()
			<-gate
			dis = r.lazaret(time.Minute, rc.verb, "discard", "--operator", "faults-race", "--reason", "race: discard", rc.f.ID)
		}()
		close(gate)
		wg.Wait()
		outcome := "one winner"
		switch {
		case rep.code == 0 && dis.code == 0:
			outcome = "both won"
			r.addExtra(rc.verb+" race: replay and discard both exited 0", fmt.Sprintf("%s (%s): replay %q / discard %q", rc.f.ObjectID, rc.f.ID, firstLine(rep.stdout), firstLine(dis.stdout)))
		case rep.code != 0 && dis.code != 0:
			outcome = "neither won"
			r.addExtra(rc.verb+" race: neither replay nor discard won", fmt.Sprintf("%s: replay exit %d %q / discard exit %d %q", rc.f.ObjectID, rep.code, firstLine(rep.stderr), dis.code, firstLine(dis.stderr)))
		case rep.code == 0:
			outcome = "replay won"
		default:
			outcome = "discard won"
		}
		mu.Lock()
		tally[rc.verb+": "+outcome]++
		mu.Unlock()
	})
	var parts []string
	for k, v := range tally {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	r.note("races done: %s", strings.Join(sortedStrings(parts), ", "))
	return nil
}

// resubmitAfterResolve lets the batch settle, replays half of the open
// failures and discards the other half, lets the replays settle, then
// submits the same manifest again: nothing may come back.
func resubmitAfterResolve(r *run) error {
	if err := startWorkers(r, 3); err != nil {
		return err
	}
	if err := r.drive(0, nil); err != nil {
		return err
	}
	r.restoreWG.Wait()
	r.settle("before the replays and discards", r.h.cfg.settle)
	type act struct {
		verb, op string
		f        failureRef
	}
	var acts []act
	for _, verb := range []string{"dlq", "quarantine"} {
		fs, err := r.failures(verb)
		if err != nil {
			return err
		}
		for i, f := range fs {
			op := "replay"
			if i%2 == 1 {
				op = "discard"
			}
			acts = append(acts, act{verb, op, f})
		}
	}
	var mu sync.Mutex
	tally := map[string]int{}
	pool(len(acts), 4, func(i int) {
		a := acts[i]
		args := []string{a.verb, a.op, "--operator", "faults", "--reason", "fault harness: " + a.op + " before resubmission", a.f.ID}
		res := r.lazaret(time.Minute, args...)
		k := fmt.Sprintf("%s %s ok", a.verb, a.op)
		if res.code != 0 {
			k = fmt.Sprintf("%s %s failed", a.verb, a.op)
			r.addExtra("operator command failed", fmt.Sprintf("%s %s %s: exit %d %s", a.verb, a.op, a.f.ObjectID, res.code, firstLine(res.stderr)))
		}
		mu.Lock()
		tally[k]++
		mu.Unlock()
	})
	var parts []string
	for k, v := range tally {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	r.note("operator actions: %s", strings.Join(sortedStrings(parts), ", "))
	r.settle("after the replays", r.h.cfg.settle)
	r.restoreAll()
	r.mark = r.maxSeq()
	res, ok := r.submit(r.b.all, time.Minute)
	r.note("resubmitted manifest.json (ledger mark #%d): ok %v: %s", r.mark, ok, firstLine(res.stdout))
	return nil
}

// budgetSpentMidway runs with a routing budget of 2: every worker is killed
// -9 whenever a delivery of the run's large sound interchange is midway,
// until two deliveries have ended without a decision, so that the next one
// dead-letters it (routing.exhausted) without validating it again. Then
// its dead letter is replayed, as an operator would. Some chunks of its
// messages were accepted by the killed deliveries: the checks say whether
// they stay accepted under a dead letter, and whether the replay accepts
// them a second time.
func budgetSpentMidway(r *run) error {
	const budget = 2
	if err := startWorkers(r, 2); err != nil {
		return err
	}
	window := faultWindow(r.h.cfg.items)
	f := fault{at: window / 10, fire: func() { r.note("the large interchange was not caught midway: no kill") },
		mid: func(obj string, chunks int) {
			for round := 1; ; round++ {
				q, _ := r.ingestInfo()
				ns := r.killAll(2)
				r.note("FAULT %d/%d: every worker killed -9 with %s midway (%d chunk(s) recorded; %s; ingest before: %s)",
					round, budget, obj, chunks, strings.Join(ns, ", "), q)
				if round == budget {
					return
				}
				// The killed delivery may have committed a chunk between the
				// poll and the kill: count again once it is surely dead, so
				// that only a redelivery's chunk counts as midway.
				time.Sleep(500 * time.Millisecond)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				now, _, err := r.led.midway(ctx, r.b.id, obj, -1)
				cancel()
				if err == nil && now > chunks {
					r.note("%s: %d chunk(s) recorded when its delivery died (%d seen before the kill)", obj, now, chunks)
					chunks = now
				}
				var ok bool
				if chunks, ok = r.midwayAgain(obj, chunks, 4*time.Minute); !ok {
					return
				}
			}
		}}
	if err := r.drive(window, []fault{f}); err != nil {
		return err
	}
	r.restoreWG.Wait()
	r.settle("after the kills", r.h.cfg.settle)
	var big string
	for _, it := range r.b.items {
		if it.IC != nil && it.IC.big && it.IC.expect == "accept" {
			big = it.ObjectID
		}
	}
	// What the ledger says before anyone acts: a dead letter, and the
	// messages its killed deliveries accepted.
	if v, err := r.evaluateNow(); err == nil {
		r.note("before the replay: %d message(s) lost, %d dup, %d wrong place (of %d)", v.MsgLost, v.MsgDup, v.MsgWrong, v.Messages)
		for k, n := range v.findings {
			if strings.HasPrefix(k, msgPrefix) {
				r.addExtra("before the replay: "+k, fmt.Sprintf("%d message(s), e.g. %s", n, v.samples[k][0]))
			}
		}
	}
	dl, err := r.failures("dlq")
	if err != nil {
		return err
	}
	for _, fr := range dl {
		if fr.ObjectID != big {
			continue
		}
		res := r.lazaret(time.Minute, "dlq", "replay", "--operator", "faults", "--reason", "fault harness: replay after the routing budget was spent", fr.ID)
		r.note("dlq replay of %s (%s): exit %d: %s", big, fr.ID, res.code, firstLine(res.stdout+res.stderr))
		return nil
	}
	r.note("%s is not among the %d dead letter(s): nothing replayed", big, len(dl))
	return nil
}
