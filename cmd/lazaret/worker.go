package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := defaultConfig()
	reconcileEvery := fs.Duration("reconcile-every", time.Minute, "how often archived tasks are checked against the ledger, and registry files for changes (a change re-checks quarantined messages and replays those that now pass)")
	if err := cfg.bind(fs, args, "redis", "ledger", "worker", "policy", "master", "edi"); err != nil {
		return err
	}
	log := cfg.logger(stderr)
	opt, ledger, err := cfg.connect(ctx)
	if err != nil {
		return err
	}
	defer ledger.Close()
	stop, err := startWorkers(ctx, &cfg, opt, ledger, log, ingest.ServerConfig{Concurrency: cfg.Concurrency}, *reconcileEvery)
	if err != nil {
		return err
	}
	log.Info("worker running", slog.String("redis", redactURL(cfg.RedisURL)), slog.String("ledger", cfg.Ledger),
		slog.Int("concurrency", cfg.Concurrency), slog.String("version", version))
	<-ctx.Done()
	log.Info("shutting down: draining running tasks")
	stop()
	log.Info("worker stopped")
	return nil
}

// startWorkers starts the asynq server and the broker reconciler. stop drains
// running tasks and returns when everything has stopped.
func startWorkers(ctx context.Context, cfg *Config, opt asynq.RedisConnOpt, ledger premis.Ledger, log *slog.Logger, sc ingest.ServerConfig, reconcileEvery time.Duration, tune ...func(*ingest.Worker)) (stop func(), err error) {
	client := asynq.NewClient(opt)
	w := cfg.worker(ledger, client, log)
	for _, t := range tune {
		t(w)
	}
	srv, mux := ingest.NewServer(opt, w, sc)
	if err := srv.Start(mux); err != nil {
		client.Close()
		return nil, fmt.Errorf("start workers: %w", err)
	}
	insp := asynq.NewInspector(opt)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(reconcileEvery)
		defer t.Stop()
		for {
			if w.Registries != nil {
				if changed, err := w.Registries.Refresh(); err != nil {
					log.Warn("registry refresh failed; the previous version stays in force", slog.String("error", err.Error()))
				} else if changed {
					r := w.Registries.Current()
					log.Info("registries loaded", slog.String("locode", r.LOCODE.Version()), slog.Int("locode_codes", r.LOCODE.Len()),
						slog.String("hs", r.HS.Version()), slog.Int("hs_codes", r.HS.Len()))
					// A new registry version may clear parked messages: re-check
					// those that failed against another version, replay what passes.
					ds, err := w.ReconcileQuarantine(rctx, insp, false)
					if err != nil && rctx.Err() == nil {
						log.Warn("quarantine reconciliation failed", slog.String("error", err.Error()))
					}
					for _, d := range ds {
						if d.Action == "replayed" {
							log.Info("quarantined item replayed after a registry change", slog.String(ingest.AttrObjectID, d.Parked.Held.Envelope.ObjectID),
								slog.String("detail", d.Detail))
						}
					}
				}
			}
			if n, err := w.ReconcileArchived(rctx, insp); err != nil && rctx.Err() == nil {
				log.Warn("broker reconciliation failed", slog.String("error", err.Error()))
			} else if n > 0 {
				log.Warn("broker reconciliation recorded archived tasks", slog.Int("events", n))
			}
			select {
			case <-rctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
		srv.Shutdown()
		insp.Close()
		client.Close()
	}, nil
}

// redactURL hides a password in a Redis URL for logs.
func redactURL(u string) string {
	opt, err := asynq.ParseRedisURI(u)
	if err != nil {
		return "(unparsable)"
	}
	if c, ok := opt.(asynq.RedisClientOpt); ok {
		return fmt.Sprintf("redis://%s/%d", c.Addr, c.DB)
	}
	return "(redis)"
}
