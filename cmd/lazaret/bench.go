package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hibiken/asynq"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/pipebench"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// declareBench declares lazaret bench, which measures, on this machine,
// validation throughput against a plain read of the same bytes: a large
// uncompressed TIFF master and a large UN/EDIFACT interchange, generated
// once into a folder.
func declareBench(fs *pflag.FlagSet, _ *Config) ([]string, action) {
	dir := fs.String("dir", filepath.Join(os.TempDir(), "lazaret-bench"), "folder for the generated inputs (reused between runs)")
	width := fs.Int("width", 8000, "master width in pixels (RGB)")
	height := fs.Int("height", 6000, "master height in pixels")
	ediMB := fs.Int64("edi-mb", 50, "interchange size in MB")
	rounds := fs.Int("rounds", 3, "runs of each measurement (validation and queries: the best is reported; pipeline and ledger: the mean of all)")
	pipeItems := fs.Int("pipeline-items", 2000, "small masters drained through the pipeline and through bare asynq, and committed into the ledger alone (0 skips both)")
	concurrency := fs.Int("concurrency", 2, "worker concurrency of the pipeline measurement (the same for bare asynq)")
	ledgerItems := fs.String("ledger-items", "2000,20000", "ledger sizes, in items of five events, for the read-model queries (empty skips; 200000 = 1M events takes minutes)")
	benchRedis := fs.String("bench-redis", "", "Redis URL for the pipeline measurement, which must be empty (default: a private redis-server on a free port)")
	river := fs.String("river", "", "riverbench `BINARY` (make riverbench builds bin/riverbench from ../shared/tools/riverbench): River's no-op drain measured in the same rounds as the pipeline, each pipeline row given its ratio to it")
	riverPostgres := fs.String("river-postgres", "", "PostgreSQL URL of a database of River's own (River migrates it and truncates river_job), for River's row beside the PostgreSQL pipeline")
	benchPostgres := fs.String("pipeline-postgres", "", "PostgreSQL URL: drain the pipeline into a PostgreSQL ledger too, in a schema of its own created and dropped each run (the role needs CREATE on the database)")
	return []string{"master"}, func(ctx context.Context, cfg *Config, args []string, stdout, stderr io.Writer) error {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return err
		}
		master := filepath.Join(*dir, fmt.Sprintf("master-%dx%d.tif", *width, *height))
		if err := generate(master, func(w io.Writer) error {
			_, err := fixtures.WriteTIFF(w, []fixtures.Page{{Width: *width, Height: *height, Samples: 3, RowsPerStrip: 16}})
			return err
		}); err != nil {
			return err
		}
		// A noisy Deflate master compresses as scanned masters do (about 1.2:1),
		// so that its row measures the inflater, not a 50:1 synthetic file.
		noisy := filepath.Join(*dir, fmt.Sprintf("master-%dx%d-noisy-deflate.tif", *width, *height))
		if err := generate(noisy, func(w io.Writer) error {
			data, err := fixtures.NoisyTIFF(fixtures.Noisy{Width: *width, Height: *height, Samples: 3, Compression: 8, Seed: 1})
			if err != nil {
				return err
			}
			_, err = w.Write(data)
			return err
		}); err != nil {
			return err
		}
		edi := filepath.Join(*dir, fmt.Sprintf("interchange-%dmb.edi", *ediMB))
		if err := generate(edi, func(w io.Writer) error { return fixtures.LargeInterchange(w, *ediMB<<20) }); err != nil {
			return err
		}
		pol := cfg.master()
		pol.PixelBudget = max(pol.PixelBudget, int64(*width)*int64(*height))
		cases := []struct {
			name, path string
			run        func(string) error
		}{
			{"sha256 read (baseline)", master, sha256File},
			{"TIFF validation with fixity", master, func(p string) error {
				_, err := validate.CheckMaster(ctx, p, nil, pol)
				return err
			}},
			{"TIFF validation with fixity, noisy Deflate", noisy, func(p string) error {
				_, err := validate.CheckMaster(ctx, p, nil, pol)
				return err
			}},
			{"segment split (baseline)", edi, func(p string) error {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				br := bufio.NewReaderSize(f, 64<<10)
				for {
					if _, err := br.ReadSlice('\''); err == io.EOF {
						return nil
					} else if err != nil && err != bufio.ErrBufferFull {
						return err
					}
				}
			}},
			{"EDIFACT parse with offsets and envelope checks", edi, func(p string) error {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = edifact.Parse(f, edifact.Limits{}, nil)
				return err
			}},
		}
		// libtiff's tiffinfo -D, which decodes every strip (through libdeflate
		// on Debian), is the anchor of the noisy Deflate row, when installed.
		if tiffinfo, err := exec.LookPath("tiffinfo"); err == nil {
			cases = append(cases[:3], append([]struct {
				name, path string
				run        func(string) error
			}{{"tiffinfo -D (libtiff, baseline)", noisy, func(p string) error {
				var stderr strings.Builder
				cmd := exec.CommandContext(ctx, tiffinfo, "-D", p)
				cmd.Stdout, cmd.Stderr = io.Discard, &stderr
				if err := cmd.Run(); err != nil || stderr.Len() > 0 {
					return fmt.Errorf("tiffinfo -D: %v: %s", err, stderr.String())
				}
				return nil
			}}}, cases[3:]...)...)
		}
		// Figures depend on the build: say which inflater and how many cores.
		fmt.Fprintf(stdout, "lazaret %s, inflate: %s, GOMAXPROCS %d\n\n", version, tiff.InflateBackend(), runtime.GOMAXPROCS(0))
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "MEASUREMENT\tINPUT\tMB\tMB/s\tPEAK HEAP MB\n")
		for _, c := range cases {
			st, err := os.Stat(c.path)
			if err != nil {
				return err
			}
			best := time.Duration(1 << 62)
			var peak uint64
			for r := 0; r < *rounds; r++ {
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				stop := sampleHeap(&peak)
				err := c.run(c.path)
				stop()
				if err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				best = min(best, time.Since(start))
			}
			mb := float64(st.Size()) / (1 << 20)
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.0f\t%.1f\n", c.name, filepath.Base(c.path), mb, mb/best.Seconds(), float64(peak)/(1<<20))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if *pipeItems > 0 {
			rv := riverBench{bin: *river, postgres: *riverPostgres}
			if err := benchPipeline(ctx, stdout, *dir, *benchRedis, *benchPostgres, rv, *pipeItems, *concurrency, *rounds, *cfg); err != nil {
				return fmt.Errorf("pipeline: %w", err)
			}
		}
		if *ledgerItems != "" {
			if err := benchReadModel(ctx, stdout, *dir, *ledgerItems, *rounds); err != nil {
				return fmt.Errorf("read model: %w", err)
			}
		}
		return nil
	}
}

// benchPipeline drains small masters through the workers (SQLite ledger,
// synchronous=FULL, group commit; and a PostgreSQL one when pgURL is set)
// and no-op tasks through bare asynq on the same Redis at the same
// concurrency, interleaved, and prints both rates and their ratio, for a
// batch that is accepted and one that is dead-lettered (against asynq's
// SkipRetry path).
func benchPipeline(ctx context.Context, stdout io.Writer, dir, redisURL, pgURL string, rv riverBench, items, concurrency, rounds int, cfg Config) error {
	if redisURL == "" {
		addr, stop, err := pipebench.StartRedis(dir)
		if err != nil {
			return err
		}
		defer stop()
		redisURL = "redis://" + addr
	}
	opt, err := asynq.ParseRedisURI(redisURL)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nPIPELINE (%d items, concurrency %d)\tITEMS/S\tASYNQ NO-OP ITEMS/S\tRATIO\tCPU µs/ITEM\tASYNQ CPU µs/ITEM\tITEMS/COMMIT\tLEDGER BYTES/ITEM\n", items, concurrency)
	sqlitePath := func(round int) string { return filepath.Join(dir, fmt.Sprintf("pipeline-ledger-%d.db", round)) }
	ledgers := []benchLedger{{name: "SQLite", size: func(round int) int64 {
		var n int64
		for _, p := range []string{sqlitePath(round), sqlitePath(round) + "-wal"} {
			if st, err := os.Stat(p); err == nil {
				n += st.Size()
			}
		}
		return n
	}, open: func(ctx context.Context, round int) (premis.Ledger, func() error, error) {
		path := sqlitePath(round)
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			_ = os.Remove(p)
		}
		l, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, nil, err
		}
		l.SetReaders(concurrency + 2) // as the worker's ledger (Config.openLedger)
		return l, func() error { return nil }, nil
	}}}
	if pgURL != "" {
		// A wrong URL or role fails now, not after the SQLite runs.
		l, drop, err := pipebench.PostgresLedger(ctx, pgURL)
		if err != nil {
			return err
		}
		l.Close()
		if err := drop(); err != nil {
			return err
		}
		ledgers = append(ledgers, benchLedger{name: "PostgreSQL", open: func(ctx context.Context, _ int) (premis.Ledger, func() error, error) {
			return pipebench.PostgresLedger(ctx, pgURL)
		}})
	}
	batches := map[bool]*pipebench.Batch{} // by fail: one for every ledger
	for _, fail := range []bool{false, true} {
		b, err := pipebench.WriteBatch(filepath.Join(dir, fmt.Sprintf("pipeline-%d-%v", items, fail)), items, fail)
		if err != nil {
			return err
		}
		batches[fail] = b
	}
	// The ceiling: the same drain into the SQLite ledger with its appends
	// left out (pipebench.Unwritten), so what is left is the worker's and the
	// broker's own cost, its reads of an empty ledger included. Not a ledger
	// for the LEDGER ALONE rows.
	ceiling := benchLedger{name: "SQLite", unwritten: true, open: func(ctx context.Context, round int) (premis.Ledger, func() error, error) {
		l, drop, err := ledgers[0].open(ctx, round)
		if err != nil {
			return nil, nil, err
		}
		return pipebench.Unwritten(l), drop, nil
	}}
	var riverRows []string // the accepted rows beside River's drain on the same database
	for _, lg := range append(slices.Clip(ledgers), ceiling) {
		for _, fail := range []bool{false, true} {
			// River drains no-op jobs into the same database as the
			// pipeline's ledger, in the same rounds, for the accepted rows.
			ro, withRiver := rv.options(lg, dir, items, concurrency)
			withRiver = withRiver && !fail && !lg.unwritten
			var riv pipebench.Run
			var ratios []float64 // ÷ River, a round each
			var stored int64     // ledger bytes on disk, over the rounds
			name := "small masters accepted, " + lg.name + " ledger"
			if fail {
				name = "small masters dead-lettered, " + lg.name + " ledger"
			}
			if lg.unwritten {
				name += " not written (ceiling)"
			}
			batch := batches[fail]
			o := pipebench.Options{Redis: opt, Items: items, Concurrency: concurrency, Fail: fail}
			var bare, pipe pipebench.Run
			var groups premis.GroupStats
			for r := range max(1, rounds) {
				bd, err := pipebench.Bare(ctx, o)
				if err != nil {
					return err
				}
				l, drop, err := lg.open(ctx, r)
				if err != nil {
					return err
				}
				pd, st, err := pipelineRun(ctx, o, batch, l, cfg)
				if lg.size != nil && !lg.unwritten {
					stored += lg.size(r) // closed by the run: its WAL checkpointed
				}
				if err := errors.Join(err, drop()); err != nil {
					return err
				}
				bare.Add(bd)
				pipe.Add(pd)
				groups.Commits, groups.Appends = groups.Commits+st.Commits, groups.Appends+st.Appends
				if withRiver {
					rd, err := pipebench.River(ctx, ro)
					if err != nil {
						return err
					}
					riv.Add(rd)
					ratios = append(ratios, rd.Wall.Seconds()/pd.Wall.Seconds())
				}
			}
			n := float64(items * max(1, rounds))
			if withRiver {
				riverRows = append(riverRows, fmt.Sprintf("%s\t%.0f\t%.0f\t%.3f\t%s\t%.0f\t%.0f\n", name, n/pipe.Wall.Seconds(), n/riv.Wall.Seconds(),
					median(ratios), roundRatios(ratios), float64(pipe.CPU.Microseconds())/n, float64(riv.CPU.Microseconds())/n))
			}
			perItem := "-"
			if stored > 0 {
				perItem = fmt.Sprintf("%.0f", float64(stored)/n)
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.3f\t%.0f\t%.0f\t%s\t%s\n", name, n/pipe.Wall.Seconds(), n/bare.Wall.Seconds(),
				bare.Wall.Seconds()/pipe.Wall.Seconds(), float64(pipe.CPU.Microseconds())/n, float64(bare.CPU.Microseconds())/n, perCommit(groups, lg.unwritten), perItem)
		}
	}
	// Bare asynq whose handler writes and syncs one record before it
	// returns, against the no-op, in the same rounds: what one sync a task
	// costs a pipeline that acknowledges a task once its record is durable
	// (a group commit shares a sync among the tasks it holds).
	o := pipebench.Options{Redis: opt, Items: items, Concurrency: concurrency, Durable: filepath.Join(dir, "anchor.log")}
	var bare, durable pipebench.Run
	for range max(1, rounds) {
		bd, err := pipebench.Bare(ctx, pipebench.Options{Redis: opt, Items: items, Concurrency: concurrency})
		if err != nil {
			return err
		}
		dd, err := pipebench.Bare(ctx, o)
		if rm := os.Remove(o.Durable); !errors.Is(rm, os.ErrNotExist) {
			err = errors.Join(err, rm)
		}
		if err != nil {
			return err
		}
		bare.Add(bd)
		durable.Add(dd)
	}
	n := float64(items * max(1, rounds))
	fmt.Fprintf(tw, "bare asynq, one synced 1 KB write a task\t%.0f\t%.0f\t%.3f\t%.0f\t%.0f\t-\t-\n", n/durable.Wall.Seconds(), n/bare.Wall.Seconds(),
		bare.Wall.Seconds()/durable.Wall.Seconds(), float64(durable.CPU.Microseconds())/n, float64(bare.CPU.Microseconds())/n)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(riverRows) > 0 {
		fmt.Fprintf(tw, "\nAGAINST RIVER (%d items, concurrency %d, same rounds)\tITEMS/S\tRIVER NO-OP ITEMS/S\t÷ RIVER (MEDIAN)\tROUNDS\tCPU µs/ITEM\tRIVER CPU µs/ITEM\n", items, concurrency)
		for _, row := range riverRows {
			fmt.Fprint(tw, row)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	} else if rv.bin == "" {
		fmt.Fprintln(stdout, "\n(no River row: make riverbench, then --river bin/riverbench)")
	}
	return benchCommits(ctx, stdout, opt, ledgers, items, rounds)
}

// median is the middle of the rounds' ratios (the mean of the middle two
// for an even count): one round slowed by the machine moves it less than
// the mean.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// roundRatios lists each round's ratio, in the order run.
func roundRatios(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(out, " ")
}

// riverBench is where River's anchor rows come from: the riverbench
// binary, and a PostgreSQL database of River's own ("" leaves River out of
// the PostgreSQL rows).
type riverBench struct{ bin, postgres string }

// options are River's drain beside ledger lg, and whether there is one.
func (rv riverBench) options(lg benchLedger, dir string, items, concurrency int) (pipebench.RiverOptions, bool) {
	o := pipebench.RiverOptions{Bin: rv.bin, Dir: dir, Items: items, Concurrency: concurrency}
	switch {
	case rv.bin == "":
		return o, false
	case lg.name == "PostgreSQL":
		o.Postgres = rv.postgres
		return o, rv.postgres != ""
	}
	return o, true
}

// benchCommits commits accepted masters into each ledger from 2 and 8
// writers through the group committer, with no worker and no broker (the
// most the pipeline could drain with today's record of an item), against
// bare asynq's no-op tasks at that concurrency, interleaved.
func benchCommits(ctx context.Context, stdout io.Writer, redis asynq.RedisConnOpt, ledgers []benchLedger, items, rounds int) error {
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nLEDGER ALONE (%d accepted masters, one record of 4 events each)\tWRITERS\tITEMS/S\tASYNQ NO-OP ITEMS/S\tRATIO\tCPU µs/ITEM\tITEMS/COMMIT\n", items)
	for _, lg := range ledgers {
		for _, writers := range []int{2, 8} {
			var bare, run pipebench.Run
			var groups premis.GroupStats
			for r := range max(1, rounds) {
				bd, err := pipebench.Bare(ctx, pipebench.Options{Redis: redis, Items: items, Concurrency: writers})
				if err != nil {
					return fmt.Errorf("bare asynq at concurrency %d: %w", writers, err)
				}
				l, drop, err := lg.open(ctx, r)
				if err != nil {
					return fmt.Errorf("ledger alone, %s: %w", lg.name, err)
				}
				rr, st, err := pipebench.LedgerCommits(ctx, l, items, writers)
				if err := errors.Join(err, l.Close(), drop()); err != nil {
					return fmt.Errorf("ledger alone, %s, %d writers: %w", lg.name, writers, err)
				}
				bare.Add(bd)
				run.Add(rr)
				groups.Commits, groups.Appends = groups.Commits+st.Commits, groups.Appends+st.Appends
			}
			n := float64(items * max(1, rounds))
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.3f\t%.0f\t%s\n", lg.name, writers, n/run.Wall.Seconds(), n/bare.Wall.Seconds(),
				bare.Wall.Seconds()/run.Wall.Seconds(), float64(run.CPU.Microseconds())/n, perCommit(groups, false))
		}
	}
	return tw.Flush()
}

// perCommit is the mean number of appends a commit held: an item's
// (in the pipeline, the submission's few appends too); none for a ledger
// whose appends are left out, which commits nothing.
func perCommit(st premis.GroupStats, unwritten bool) string {
	if st.Commits == 0 || unwritten {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(st.Appends)/float64(st.Commits))
}

// benchLedger is a ledger the pipeline is measured with: open gives a fresh
// one for each round, and what to do once it is closed.
type benchLedger struct {
	name string
	open func(ctx context.Context, round int) (l premis.Ledger, drop func() error, err error)
	// unwritten: the ledger's appends are left out (pipebench.Unwritten).
	unwritten bool
	// size, when set, is what the ledger of a round takes on disk once
	// closed: tables, indexes and read model.
	size func(round int) int64
}

// pipelineRun is one pipeline drain into the fresh ledger l, which it
// closes; the queue is emptied of its tasks afterwards.
func pipelineRun(ctx context.Context, o pipebench.Options, batch *pipebench.Batch, l premis.Ledger, cfg Config) (_ pipebench.Run, _ premis.GroupStats, err error) {
	g := premis.NewGroupCommit(l, 0)
	defer func() { err = errors.Join(err, g.Close()) }()
	c := asynq.NewClient(o.Redis)
	defer c.Close()
	w := cfg.worker(g, c, pipebench.Discard())
	run, _, err := pipebench.Pipeline(ctx, o, w, batch)
	insp := asynq.NewInspector(o.Redis)
	defer insp.Close()
	_ = insp.DeleteQueue(ingest.QueueIngest, true) // the next run starts on an empty queue
	return run, g.Stats(), err
}

// benchReadModel fills a fresh ledger of each size and times the
// operators' questions on it.
func benchReadModel(ctx context.Context, stdout io.Writer, dir, sizes string, rounds int) error {
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nREAD MODEL (SQLite)\tITEMS\tEVENTS\tBEST ms\tALLOCATED KB\tRESULTS\n")
	for _, f := range strings.Split(sizes, ",") {
		items, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || items < 1 {
			return fmt.Errorf("--ledger-items: %q is not a count of items", f)
		}
		path := filepath.Join(dir, fmt.Sprintf("readmodel-%d.db", items))
		fresh := false
		if _, err := os.Stat(path); err != nil {
			fresh = true
		}
		l, err := sqlite.Open(ctx, path)
		if err != nil {
			return err
		}
		batch := fmt.Sprintf("fill-%06d", (items-1)/1000)
		if fresh {
			if batch, err = pipebench.FillLedger(ctx, l, items); err != nil {
				l.Close()
				return err
			}
		}
		qs, err := pipebench.ReadModel(ctx, l, batch, rounds)
		l.Close()
		if err != nil {
			return err
		}
		for _, q := range qs {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.0f\t%d\n", q.Name, items, items*5, float64(q.Best.Microseconds())/1000, float64(q.Alloc)/1024, q.Results)
		}
	}
	return tw.Flush()
}

func generate(path string, write func(io.Writer) error) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	f, err := os.Create(path + ".partial")
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 4<<20)
	if err := write(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".partial", path)
}

func sha256File(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyBuffer(sha256.New(), f, make([]byte, 1<<20))
	return err
}

// sampleHeap records the largest live heap until stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			*peak = max(*peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
