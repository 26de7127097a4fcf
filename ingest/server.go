package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hibiken/asynq"
)

// ServerConfig is how a worker process runs.
type ServerConfig struct {
	Concurrency int
	// ShutdownTimeout is how long a graceful stop waits for running tasks.
	ShutdownTimeout time.Duration
	// PollInterval is how often scheduled and retry tasks are moved to
	// pending (asynq's DelayedTaskCheckInterval).
	PollInterval time.Duration
}

// NewServer wires w into an asynq server that consumes the ingest queue
// only: quarantine and audit-hold have no consumer by design.
func NewServer(redis asynq.RedisConnOpt, w *Worker, cfg ServerConfig) (*asynq.Server, *asynq.ServeMux) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 2
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	srv := asynq.NewServer(redis, asynq.Config{
		Concurrency:    cfg.Concurrency,
		Queues:         map[string]int{QueueIngest: 1},
		RetryDelayFunc: w.Policy.RetryDelay,
		// Every error counts against asynq's budget, routing failures
		// included: BrokerRetries sizes that budget so Lazaret decides
		// first, and a failure that never clears cannot loop. A pause for
		// an unwritable ledger alone does not count (see pauseIntake):
		// the task waits, whatever the outage's length.
		IsFailure:                isFailure,
		ShutdownTimeout:          cfg.ShutdownTimeout,
		DelayedTaskCheckInterval: cfg.PollInterval,
		Logger:                   NewAsynqLogger(w.Logger),
		// asynq's own warnings ("Retry exhausted for task id=…") repeat
		// what the handler logged with the item's fields; its errors stay.
		LogLevel: asynq.ErrorLevel,
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
			// Decisions are logged where they are made (the handler); this
			// catches what asynq itself saw, at debug level.
			w.Logger.Debug("task error", slog.String("type", t.Type()), slog.String("error", err.Error()))
		}),
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(TypeValidate, w.HandleValidate)
	return srv, mux
}

// asynqLogger adapts slog to asynq.Logger; its warnings and errors repeat
// while Redis is down, so each kind is throttled (see throttle).
type asynqLogger struct {
	l *slog.Logger
	t *throttle
}

// NewAsynqLogger returns an asynq.Logger writing to l.
func NewAsynqLogger(l *slog.Logger) asynq.Logger {
	return asynqLogger{l.With("component", "asynq"), newThrottle(throttleEvery)}
}

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.log(slog.LevelWarn, fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.log(slog.LevelError, fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) {
	a.l.Error(fmt.Sprint(args...), slog.Bool("fatal", true))
	os.Exit(1)
}

func (a asynqLogger) log(level slog.Level, msg string) {
	ok, dropped := a.t.allow(lineKind(msg), time.Now())
	if !ok {
		return
	}
	if dropped > 0 {
		a.l.Log(context.Background(), level, msg, slog.Int("repeated", dropped))
		return
	}
	a.l.Log(context.Background(), level, msg)
}
