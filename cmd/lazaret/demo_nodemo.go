//go:build nodemo

package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/pflag"
)

// declareDemo, in a build without the demo (make build TAGS=nodemo): the
// production binary links no in-process Redis.
func declareDemo(_ *pflag.FlagSet, _ *Config) ([]string, action) {
	return nil, func(_ context.Context, _ *Config, args []string, stdout, stderr io.Writer) error {
		return &exitError{code: 2, noHelp: true, err: errors.New("demo: this lazaret was built without the demo (-tags nodemo); build it with make build, or run go run ./cmd/lazaret demo")}
	}
}
