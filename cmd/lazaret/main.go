// Command lazaret validates TIFF preservation masters and UN/EDIFACT
// interchanges on asynq workers, routes every failure to exactly one place,
// and records it as a PREMIS event in a durable ledger.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/tiff"

	// The ledgers --ledger can name, each registered by its URL scheme
	// (premis.RegisterBackend): a file path or sqlite://, postgres://.
	_ "github.com/lazaret/lazaret/premis/postgres"
	_ "github.com/lazaret/lazaret/premis/sqlite"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// exitError carries an exit code out of a command (see exitStatus): 1 for
// a failure found or an operation that failed, 2 for a usage error. cmd,
// when set, is the command whose help a usage error points to.
type exitError struct {
	code int
	err  error
	cmd  *cobra.Command
	// noHelp: a usage error whose fix is not in the command's help (a
	// ledger path that names nothing): no "Run --help" line.
	noHelp bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// settingErr is a usage error about a setting's value, which the message
// itself explains: exit 2, without pointing at --help.
func settingErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...), noHelp: true}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stderr := newSafeWriter(os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, stderr)
	stop()
	if err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if ee == nil || ee.err != nil {
			fmt.Fprintln(stderr, "lazaret:", err)
		}
		stderr.Flush()
		os.Exit(code)
	}
}

// run runs the command args name. Every error is an *exitError; a usage
// error says which --help to read. What the command prints goes through
// a safeWriter (see termsafe.go): nothing a submitter wrote reaches the
// terminal raw.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	out, errw := newSafeWriter(stdout), newSafeWriter(stderr)
	defer out.Flush()
	defer errw.Flush()
	stdout, stderr = out, errw
	// go-redis writes plain text on standard error unless told otherwise:
	// JSON from the first line on (a command's own logger replaces this).
	redis.SetLogger(ingest.NewRedisLogger(slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	_, err := root.ExecuteContextC(ctx)
	if err == nil {
		return nil
	}
	ee := &exitError{code: 2, err: err, cmd: root} // cobra's own: an unknown command or flag
	errors.As(err, &ee)
	if ee.code == 2 && ee.err != nil && ee.cmd != nil && !ee.noHelp {
		ee.err = fmt.Errorf("%w\n\nRun '%s --help' for usage", ee.err, ee.cmd.CommandPath())
	}
	return ee
}

// declareVersion declares lazaret version.
func declareVersion(fs *pflag.FlagSet, _ *Config) ([]string, action) {
	asJSON := fs.Bool("json", false, "print {\"version\": ...}")
	return nil, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		if len(args) > 0 {
			return usageErr("version: unexpected arguments %q", args)
		}
		if *asJSON {
			return writeJSON(stdout, struct {
				Version string `json:"version"`
				Inflate string `json:"inflate"`
			}{version, tiff.InflateBackend()})
		}
		fmt.Fprintln(stdout, "lazaret", version)
		fmt.Fprintln(stdout, "inflate:", tiff.InflateBackend())
		return nil
	}
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
