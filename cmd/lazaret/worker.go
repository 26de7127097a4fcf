package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
)

func declareWorker(fs *pflag.FlagSet, cfgOf *Config) ([]string, action) {
	metricsAddr := fs.String("metrics-listen", "", "serve this process's own series (ledger appends and their time, processing time, reconcile repairs, Go runtime) at http://`ADDR`/metrics; what the workers decide is counted from the ledger by serve's /metrics")
	refuseEvictingFlag(fs, cfgOf)
	reconcileEvery := fs.Duration("reconcile-every", time.Minute, "how often one page of the expectation pass runs (every item the ledger expects broker work for must have a task that will run; one worker of the fleet at a time), archived tasks are checked against the ledger, and registry files for changes (a change re-checks quarantined messages and replays those that now pass)")
	return []string{"redis", "ledger", "worker", "policy", "master", "edi", "links", "checkpoint"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		log := cfg.logger(stderr)
		if _, err := cfg.checkpoints(); err != nil {
			return err
		}
		opt, ledger, err := cfg.connect(ctx)
		if err != nil {
			return err
		}
		defer ledger.Close()
		client := asynq.NewClient(opt)
		defer client.Close()
		insp := asynq.NewInspector(opt)
		defer insp.Close()
		w := cfg.worker(ledger, client, log)
		op := cfg.operator(w, client, insp, opt)
		var evictionPolicy func(string)
		if *metricsAddr != "" {
			m := api.NewMetrics(nil)
			evictionPolicy = m.ObserveEvictionPolicy
			w.Ledger = observeAppends(ledger, m.ObserveAppend)
			w.Observe = m.Observe
			op.Repaired = m.ObserveReconcile
			ln, err := net.Listen("tcp", *metricsAddr)
			if err != nil {
				return usageErr("--metrics-listen %s: %v", *metricsAddr, err)
			}
			mux := http.NewServeMux()
			mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
			// A scrape target needs few connections: a flood of them must
			// not take the descriptors this worker opens masters with.
			hs, lim := httpServer(mux, log, metricsConnections)
			go hs.Serve(lim.Listener(ln))
			defer hs.Close()
			log.Info("worker metrics", slog.String("listen", ln.Addr().String()))
		}
		if err := cfg.checkBrokerEviction(ctx, opt, log, evictionPolicy); err != nil {
			return err
		}
		stop, err := startWorkers(ctx, w, op, opt, ingest.ServerConfig{Concurrency: cfg.Concurrency, ShutdownTimeout: cfg.DrainTimeout}, *reconcileEvery)
		if err != nil {
			return err
		}
		// The head is checkpointed as the workers move it, outside the
		// database; stopped after the workers, so the last head is in the log.
		_, stopCheckpoints, err := startCheckpoints(ctx, cfg, ledger, log, false)
		if err != nil {
			stop()
			return err
		}
		defer stopCheckpoints()
		if cfg.CheckpointDir != "" && cfg.CheckpointKey == "" {
			log.Warn("no --checkpoint-key: this worker checkpoints nothing", slog.String("checkpoint_dir", cfg.CheckpointDir))
		}
		if os.Geteuid() == 0 {
			log.Warn("running as root: a worker needs only read access to the ingest roots and write access to its ledger; see deploy/systemd")
		}
		log.Info("worker running", slog.String("redis", redactURL(cfg.RedisURL)), slog.String("ledger", cfg.Ledger),
			slog.Int("concurrency", cfg.Concurrency), slog.String("version", version))
		<-ctx.Done()
		log.Info("shutting down: draining running tasks")
		stop()
		log.Info("worker stopped")
		return nil
	}
}

// startWorkers starts the asynq server for w and the reconciler that op
// runs every reconcileEvery. stop drains running tasks and returns when
// everything has stopped; the caller closes what it opened.
func startWorkers(ctx context.Context, w *ingest.Worker, op *ingest.Operator, opt asynq.RedisConnOpt, sc ingest.ServerConfig, reconcileEvery time.Duration) (stop func(), err error) {
	log := w.Logger
	srv, mux := ingest.NewServer(opt, w, sc)
	if err := srv.Start(mux); err != nil {
		return nil, fmt.Errorf("start workers: %w", err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	rc, _ := opt.MakeRedisClient().(redis.UniversalClient)
	runID := ""
	name := ingest.WorkerName()
	// The announcement outlives two missed ticks, then the worker drops
	// out of the fleet a reconciliation waits for.
	announceTTL := 2*reconcileEvery + 15*time.Second
	var pass *ingest.ExpectationPass
	if rc != nil {
		pass = &ingest.ExpectationPass{Op: op, Redis: rc, Name: name, Every: reconcileEvery}
		go ingest.WatchBroker(rctx, rc, log, 2*time.Second, ingest.SentinelPrimary(opt))
	}
	go func() {
		defer close(done)
		if rc != nil {
			defer rc.Close()
			defer ingest.WithdrawRegistries(context.WithoutCancel(rctx), rc, name)
		}
		t := time.NewTicker(reconcileEvery)
		defer t.Stop()
		pending := false // a registry change whose reconciliation has not run yet
		for {
			if w.Registries != nil {
				if changed, err := w.Registries.Refresh(); err != nil {
					log.Warn("registry refresh failed; the previous version stays in force", slog.String("error", err.Error()))
				} else if changed {
					r := w.Registries.Current()
					log.Info("registries loaded", slog.String("locode", r.LOCODE.Version()), slog.Int("locode_codes", r.LOCODE.Len()),
						slog.String("hs", r.HS.Version()), slog.Int("hs_codes", r.HS.Len()))
					pending = true
				}
				// Say which versions this worker validates with before it
				// reconciles: a reconciliation replays only once every live
				// worker holds what it loaded.
				if r := w.Registries.Current(); rc != nil {
					if err := ingest.AnnounceRegistries(rctx, rc, name, r.LOCODE.Version(), r.HS.Version(), announceTTL); err != nil && rctx.Err() == nil {
						log.Warn("could not announce the registry versions", slog.String("error", err.Error()))
					}
				}
				if pending {
					// A new registry version may clear parked messages: re-check
					// those that failed against another version, replay what
					// passes; while other workers are behind, try again next tick.
					ds, err := op.ReconcileQuarantine(rctx, ingest.ReconcileOptions{})
					var fb *ingest.FleetBehindError
					switch {
					case errors.As(err, &fb):
						log.Info("quarantine reconciliation waits for the other workers' registries", slog.Int("behind", len(fb.Behind)))
					case err != nil && rctx.Err() == nil:
						log.Warn("quarantine reconciliation failed", slog.String("error", err.Error()))
					default:
						pending = false
					}
					for _, d := range ds {
						if d.Action == "replayed" {
							log.Info("quarantined item replayed after a registry change", slog.String(ingest.AttrObjectID, d.Parked.Held.Envelope.ObjectID),
								slog.String("detail", d.Detail))
						}
					}
				}
			}
			// The whole-ledger pass (lost submissions, lost parked copies)
			// runs whenever Redis restarted or the primary changed (a new
			// run_id or replication id): a Redis that keeps nothing on disk
			// loses its queues then, and a failover loses what the old
			// primary had not replicated. At start it reads on from the
			// mark the last pass against the same data left (a restarted
			// worker, its Redis as it was, has only what was submitted or
			// moved since to look at), or the whole ledger when there is
			// none. Otherwise one page of the expectation pass runs (the
			// archived set, then the next items after its cursor), by the
			// worker that holds its lease.
			if id := ingest.BrokerDataID(rctx, rc); id != runID {
				since := int64(0)
				if runID == "" {
					since = ingest.ReconciledThrough(rctx, rc, id)
				}
				if _, through, err := op.ReconcileBrokerSince(rctx, since, false); err != nil && rctx.Err() == nil {
					log.Warn("broker reconciliation failed", slog.String("error", err.Error()))
				} else if err == nil {
					if runID != "" {
						log.Warn("redis restarted or its primary changed: broker reconciled against the ledger", slog.String("run_id", id))
					}
					if err := ingest.MarkReconciled(rctx, rc, id, through); err != nil && rctx.Err() == nil {
						log.Warn("could not mark the broker reconciled", slog.String("error", err.Error()))
					}
					runID = id
				}
			} else if pass != nil {
				// One page of the expectation pass, by whichever worker
				// holds its lease: what the ledger expects and the broker
				// will not run is put back (see ingest.ExpectationPass).
				if _, _, err := pass.Tick(rctx); err != nil && rctx.Err() == nil {
					log.Warn("expectation pass failed", slog.String("error", err.Error()))
				}
			} else if _, err := op.ReconcileArchived(rctx, false); err != nil && rctx.Err() == nil {
				log.Warn("broker reconciliation failed", slog.String("error", err.Error()))
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
		w.Drain()
		srv.Shutdown()
	}, nil
}

// redactURL hides a password in a Redis URL for logs and messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable)"
	}
	if _, has := p.User.Password(); has {
		p.User = url.UserPassword(p.User.Username(), "xxxxx")
	}
	return p.String()
}

// refuseEvictingFlag declares --refuse-evicting-redis on the commands that
// run workers against a Redis of the operator's (worker, serve; not the
// demo's embedded one).
func refuseEvictingFlag(fs *pflag.FlagSet, c *Config) {
	fs.BoolVar(&c.RefuseEvicting, "refuse-evicting-redis", c.RefuseEvicting, "do not start workers against a Redis whose maxmemory-policy is not noeviction (it loses tasks silently under memory pressure); without it that is a warning")
}

// checkBrokerEviction says at start whether the broker's Redis may evict
// keys: a maxmemory-policy other than noeviction is an error with
// --refuse-evicting-redis and a warning without; a policy that cannot be
// read (CONFIG disabled, as on managed Redis) is a warning that says so.
// observe, when set, is told the policy ("unknown" when unread).
func (c *Config) checkBrokerEviction(ctx context.Context, opt asynq.RedisConnOpt, log *slog.Logger, observe func(policy string)) error {
	rc, _ := opt.MakeRedisClient().(redis.UniversalClient)
	if rc != nil {
		defer rc.Close()
	}
	policy, err := ingest.BrokerEviction(ctx, rc)
	var ev *ingest.EvictingError
	switch {
	case errors.As(err, &ev):
		if observe != nil {
			observe(policy)
		}
		if c.RefuseEvicting {
			return fmt.Errorf("%w (--refuse-evicting-redis)", err)
		}
		log.Warn("redis may evict task keys: "+err.Error(), slog.String("maxmemory_policy", policy))
	case err != nil:
		if observe != nil {
			observe("unknown")
		}
		log.Warn("could not check redis's maxmemory-policy; make sure it is noeviction, or Redis may evict task keys and lose work silently",
			slog.String("error", err.Error()))
	default:
		if observe != nil {
			observe(policy)
		}
	}
	return nil
}
