package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// declareServe declares lazaret serve, which runs the workers (unless
// --no-worker) and the HTTP server: asynqmon at /monitoring/, /metrics,
// /healthz, /readyz and the /v1/ API.
func declareServe(fs *pflag.FlagSet, defaults *Config) ([]string, action) {
	refuseEvictingFlag(fs, defaults)
	listen := fs.String("listen", "127.0.0.1:8080", "`ADDRESS` to serve on (loopback unless told otherwise)")
	noWorker := fs.Bool("no-worker", false, "serve the API and monitoring only")
	// Secrets come from the environment after parsing, so that --help
	// never prints one as a default.
	token := fs.String("api-token", "", "bearer `TOKEN` for mutating API calls (env LAZARET_API_TOKEN); empty disables them")
	webhook := fs.String("webhook", "", "POST a JSON alert to this `URL` for every dead letter, quarantine and audit-hold arrival (env LAZARET_WEBHOOK_URL)")
	secret := fs.String("webhook-secret", "", "sign alerts: X-Lazaret-Signature = sha256=HMAC(`SECRET`, body) (env LAZARET_WEBHOOK_SECRET)")
	writable := fs.Bool("monitoring-writable", false, "refused: asynqmon's task actions bypass the ledger (use lazaret dlq, quarantine and hold)")
	reconcileEvery := fs.Duration("reconcile-every", time.Minute, "how often the broker is reconciled with the ledger and registries reloaded")
	readToken := fs.String("read-token", "", "bearer `TOKEN` for reads (env LAZARET_READ_TOKEN); the API token works too")
	insecure := fs.Bool("insecure-listen", false, "serve beyond loopback without a read token (failures, paths and digests are then public)")
	maxConns := fs.Int("max-connections", 0, "hold at most `N` HTTP connections open; at the limit the longest idle one is closed for a new one (0: half the process's file descriptor limit, so the workers keep theirs)")
	var hosts listFlag
	fs.Var(&hosts, "allowed-host", "`HOST` name requests may carry in Host (repeatable); default: localhost and the listen address's")
	return []string{"redis", "ledger", "worker", "policy", "master", "edi", "roots", "links", "checkpoint", "verify"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		for _, v := range []struct {
			dst *string
			env string
		}{{token, "LAZARET_API_TOKEN"}, {webhook, "LAZARET_WEBHOOK_URL"}, {secret, "LAZARET_WEBHOOK_SECRET"}, {readToken, "LAZARET_READ_TOKEN"}} {
			if *v.dst == "" {
				*v.dst = os.Getenv(v.env)
			}
		}
		if *writable {
			return usageErr("serve: --monitoring-writable is refused: asynqmon would run, delete and archive tasks with no ledger event and no operator; act with lazaret dlq|quarantine|hold or the /v1/ API, which record who did what")
		}
		lhost, _, err := net.SplitHostPort(*listen)
		if err != nil {
			return usageErr("serve: --listen %q: %v", *listen, err)
		}
		loopback := lhost == "localhost"
		if ip := net.ParseIP(lhost); ip != nil {
			loopback = ip.IsLoopback()
		}
		if !loopback && *readToken == "" && !*insecure {
			return usageErr("serve: --listen %s is reachable beyond this machine: set --read-token (and --api-token for changes), or say --insecure-listen", *listen)
		}
		if len(hosts) == 0 {
			hosts = listFlag{"localhost", "127.0.0.1", "::1"}
			if lhost != "" && !slices.Contains(hosts, lhost) {
				hosts = append(hosts, lhost)
			}
			if !loopback {
				hosts = nil // beyond loopback the names are the operator's to give
			}
		}
		log := cfg.logger(stderr)
		if _, err := cfg.checkpoints(); err != nil {
			return err
		}
		opt, ledger, err := cfg.connect(ctx)
		if err != nil {
			return err
		}
		defer ledger.Close()
		srv, stop, err := newServer(ctx, cfg, opt, ledger, log, serveOptions{token: *token, webhook: *webhook, secret: *secret, writable: *writable,
			worker: !*noWorker, reconcileEvery: *reconcileEvery, readToken: *readToken, hosts: hosts})
		if err != nil {
			return err
		}
		defer stop()
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return err
		}
		hs, lim := httpServer(srv, log, *maxConns)
		ln = lim.Listener(ln)
		log.Info("serving", slog.String("listen", ln.Addr().String()), slog.Bool("worker", !*noWorker), slog.Bool("api_writable", *token != ""),
			slog.Int("max_connections", lim.Max()), slog.String("version", version))
		fmt.Fprintf(stdout, "lazaret serving on http://%s (monitoring at /monitoring/)\n", ln.Addr())
		errc := make(chan error, 1)
		go func() { errc <- hs.Serve(ln) }()
		select {
		case <-ctx.Done():
		case err := <-errc:
			if !errors.Is(err, http.ErrServerClosed) {
				return err
			}
		}
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return hs.Shutdown(sctx)
	}
}

type serveOptions struct {
	token, webhook, secret string
	writable               bool
	worker                 bool
	readToken              string
	hosts                  []string
	reconcileEvery         time.Duration
}

// newServer wires the HTTP handler and, with o.worker, the workers.
func newServer(ctx context.Context, cfg *Config, opt asynq.RedisConnOpt, ledger premis.Ledger, log *slog.Logger, o serveOptions) (http.Handler, func(), error) {
	insp := asynq.NewInspector(opt)
	client := asynq.NewClient(opt)
	w := cfg.worker(ledger, client, log)
	ops := cfg.operator(w, client, insp, opt)
	metrics := api.NewMetrics(ops)
	ops.Repaired = metrics.ObserveReconcile
	// This process's appends (its workers', its operator actions') are
	// timed and counted; what the ledger holds is counted from the ledger.
	obs := observeAppends(ledger, metrics.ObserveAppend)
	w.Ledger, ops.Ledger = obs, obs
	// Outcomes, failures and alerts come from the ledger, whichever
	// worker (this process's or another host's) decided them.
	var alerter *api.Alerter
	if o.webhook != "" {
		alerter = &api.Alerter{URL: o.webhook, Secret: o.secret, Logger: log, Metrics: metrics}
		alerter.Start(context.WithoutCancel(ctx))
		metrics.OnFailure(alerter.ObserveEvent)
	}
	tailCtx, stopTail := context.WithCancel(context.WithoutCancel(ctx))
	go metrics.Tail(tailCtx, 2*time.Second)
	observe := metrics.Observe
	stopWorkers := func() {}
	if o.worker {
		var err error
		w.Observe = observe
		if err := cfg.checkBrokerEviction(ctx, opt, log, metrics.ObserveEvictionPolicy); err != nil {
			stopTail()
			insp.Close()
			client.Close()
			return nil, nil, err
		}
		stopWorkers, err = startWorkers(ctx, w, ops, opt, ingest.ServerConfig{Concurrency: cfg.Concurrency, ShutdownTimeout: cfg.DrainTimeout}, o.reconcileEvery)
		if err != nil {
			stopTail()
			insp.Close()
			client.Close()
			return nil, nil, err
		}
	}
	// The API's reads stand on the ledger this verifier checks as it
	// grows (and, with a key, checkpoints).
	verifier, stopCheckpoints, err := startCheckpoints(ctx, cfg, ledger, log, true)
	if err != nil {
		stopTail()
		stopWorkers()
		insp.Close()
		client.Close()
		return nil, nil, err
	}
	mon := asynqmon.New(asynqmon.Options{RootPath: "/monitoring", RedisConnOpt: opt, ReadOnly: true,
		PayloadFormatter: asynqmon.PayloadFormatterFunc(api.PayloadFormatter(ledger))})
	var checker api.LedgerChecker
	if verifier != nil {
		checker = verifier
	}
	metrics.WatchHealth(ledger.Ping, ops.Ping, checker)
	s := &api.Server{Ops: ops, Metrics: metrics, Token: o.token, Software: software, Logger: log, Monitoring: mon, Roots: cfg.IngestRoots,
		ReadToken: o.readToken, AllowedHosts: o.hosts}
	if verifier != nil {
		s.Verifier = verifier
	}
	return s.Handler(), func() {
		stopTail()
		stopWorkers()
		stopCheckpoints()
		if alerter != nil {
			alerter.Stop()
		}
		mon.Close()
		insp.Close()
		client.Close()
	}, nil
}

// metricsConnections is the connection limit of a worker's
// --metrics-listen server.
const metricsConnections = 64

// httpServer is serve's (and a worker's metrics) HTTP server for h: header, read and idle timeouts
// (a connection that sends nothing is closed after ReadHeaderTimeout), at
// most maxConns connections (0: half the descriptor limit; see
// api.ConnLimit: wrap the listener with the limit returned), and
// net/http's own error log (accept errors, panics) through log, as JSON
// like every other line.
func httpServer(h http.Handler, log *slog.Logger, maxConns int) (*http.Server, *api.ConnLimit) {
	if maxConns <= 0 {
		maxConns = max(descriptorLimit()/2, 16)
	}
	lim := api.NewConnLimit(maxConns)
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ConnState: lim.ConnState, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}, lim
}
