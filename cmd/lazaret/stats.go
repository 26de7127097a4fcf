package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/hibiken/asynq"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/ingest"
)

// declareStats declares lazaret stats: the queues as /v1/queues serves them.
func declareStats(fs *pflag.FlagSet, _ *Config) ([]string, action) {
	asJSON := fs.Bool("json", false, "one JSON object per queue per line (what GET /v1/queues serves, as a list)")
	return []string{"redis"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		if len(args) > 0 {
			return usageErr("stats: unexpected arguments %q", args)
		}
		opt, err := cfg.redis()
		if err != nil {
			return err
		}
		insp := asynq.NewInspector(opt)
		defer insp.Close()
		stats, err := (&ingest.Operator{Broker: insp}).Stats()
		if err != nil {
			return fmt.Errorf("broker %s: %w", redactURL(cfg.RedisURL), err)
		}
		if *asJSON {
			for _, q := range stats {
				if err := writeJSON(stdout, q); err != nil {
					return err
				}
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "QUEUE\tPENDING\tACTIVE\tSCHEDULED\tRETRY\tARCHIVED\tCOMPLETED\tLATENCY\tPAUSED\t")
		for _, q := range stats {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1fs\t%v\t\n", q.Queue, q.Pending, q.Active, q.Scheduled, q.Retry, q.Archived, q.Complete, q.LatencySeconds, q.Paused)
		}
		return tw.Flush()
	}
}
