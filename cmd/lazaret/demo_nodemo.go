//go:build nodemo

package main

import (
	"context"
	"errors"
	"flag"
	"io"
)

// runDemo, in a build without the demo (make build TAGS=nodemo): the
// production binary links no in-process Redis.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := defaultConfig()
	if err := cfg.bind(ctx, fs, args); err != nil {
		return err
	}
	return &exitError{code: 2, noHelp: true, err: errors.New("demo: this lazaret was built without the demo (-tags nodemo); build it with make build, or run go run ./cmd/lazaret demo")}
}
