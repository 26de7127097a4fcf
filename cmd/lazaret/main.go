// Command lazaret validates TIFF preservation masters (and, later, UN/EDIFACT
// interchanges) on asynq workers, routes every failure to exactly one place,
// and records it as a PREMIS event in a durable ledger.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// exitError carries an exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func usageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if ee == nil || ee.err != nil {
			fmt.Fprintln(os.Stderr, "lazaret:", err)
		}
		os.Exit(code)
	}
}

const usage = `lazaret: failure-handling ingest for TIFF masters and UN/EDIFACT interchanges

Usage:
  lazaret inspect [--json] [--batch MANIFEST] [FILE...]   validate files locally, no queue
  lazaret submit  [--redis URL] MANIFEST                  check a batch manifest and enqueue it
  lazaret worker  [--redis URL] [--ledger DSN]            run workers until SIGINT/SIGTERM
  lazaret serve   [--listen 127.0.0.1:8080] [--no-worker]  workers + asynqmon + /metrics + /v1/ API
  lazaret events export [--ledger DSN] --format premis-xml [--object ID | --batch ID] [-o FILE]
  lazaret events ls [--ledger DSN] [--batch ID | --object ID] [--json]
  lazaret ledger verify [--ledger DSN] [--json] [--anchor N:HASH]  check the ledger's hash chain and guards
  lazaret dlq        ls|show|replay|redrive|discard         dead letters (asynq's archived set)
  lazaret quarantine ls|show|replay|discard|reconcile       parked for reconciliation
  lazaret hold       ls|show|release|reject                 audit-hold: a person decides
  lazaret batch status ID                                   every item's latest outcome
  lazaret reconcile-broker                                  ledger vs broker: record and report gaps
  lazaret contrl  FILE.edi                                print the CONTRL report for an interchange
  lazaret demo    [--data DIR]                            everything in one process, embedded Redis + SQLite
  lazaret bench   [--dir DIR]                             measure validation speed on this machine
  lazaret version

Every command reads LAZARET_REDIS_URL and LAZARET_LEDGER; flags win. Run a
command with -h for its flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{code: 2}
	}
	switch args[0] {
	case "inspect":
		return runInspect(ctx, args[1:], stdout, stderr)
	case "submit":
		return runSubmit(ctx, args[1:], stdout, stderr)
	case "worker":
		return runWorker(ctx, args[1:], stdout, stderr)
	case "events":
		return runEvents(ctx, args[1:], stdout, stderr)
	case "ledger":
		return runLedger(ctx, args[1:], stdout, stderr)
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "contrl":
		return runContrl(ctx, args[1:], stdout, stderr)
	case "dlq", "quarantine", "hold":
		return runFailures(ctx, failureCommands[args[0]], args[1:], stdout, stderr)
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "batch":
		return runBatch(ctx, args[1:], stdout, stderr)
	case "reconcile-broker":
		return runReconcileBroker(ctx, args[1:], stdout, stderr)
	case "bench":
		return runBench(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "lazaret", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageErr("unknown command %q", args[0])
}

// asAny reports whether err matches any of the targets (errors.As).
func asAny(err error, targets ...any) bool {
	for _, t := range targets {
		if errors.As(err, t) {
			return true
		}
	}
	return false
}
