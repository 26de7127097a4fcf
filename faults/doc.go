// Package faults is Lazaret's fault harness. It treats Lazaret as a black
// box: it builds ./cmd/lazaret into a temporary folder, starts its own
// redis-server on a free loopback port (and, for the PostgreSQL rows, its own
// role and database on the local server), runs `lazaret submit`, `lazaret
// worker` and the operator verbs as separate processes, injects faults (kill
// -9 of workers, Redis restarts and crashes with and without persistence, a
// Redis Sentinel failover and a kill -9 of its primary, a ledger cut, racing
// replay and discard, resubmission after both) and checks
// after every scenario, from the ledger and the broker alone, that nothing was
// lost, nothing settled twice, nothing was parked twice and nothing sits in the
// wrong place. Batches hold TIFF masters and UN/EDIFACT interchanges; every
// message of an interchange whose envelope is accepted must end in exactly
// one place (a member of one accepted chunk, or events of its own), and no
// message of a rejected one may be accepted.
//
// The harness is the test TestFaults, skipped unless LAZARET_FAULTS=1:
//
//	make faults-smoke   # a few hundred items, both ledgers, strict (CI)
//	make faults         # 8000 items, 20 worker kills
//
// Results go to standard output and to artifacts/faults.md; per-run details
// (samples of every violation, the fault timeline, command output) to
// artifacts/faults/. The environment variables it reads are listed in
// faults_test.go (loadConfig).
package faults
