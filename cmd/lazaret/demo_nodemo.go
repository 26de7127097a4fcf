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
func declareDemo(fs *flag.FlagSet, cfg *Config) ([]string, action) {
	return []string{}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		return &exitError{code: 2, noHelp: true, err: errors.New("demo: this lazaret was built without the demo (-tags nodemo); build it with make build, or run go run ./cmd/lazaret demo")}
	}
}
