package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/validate"
)

// runBench measures, on this machine, validation throughput against a
// plain read of the same bytes: a large uncompressed TIFF master and a
// large UN/EDIFACT interchange, generated once into a folder.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", filepath.Join(os.TempDir(), "lazaret-bench"), "folder for the generated inputs (reused between runs)")
	width := fs.Int("width", 8000, "master width in pixels (RGB)")
	height := fs.Int("height", 6000, "master height in pixels")
	ediMB := fs.Int64("edi-mb", 50, "interchange size in MB")
	rounds := fs.Int("rounds", 3, "runs of each measurement (the best is reported)")
	cfg := defaultConfig()
	if err := cfg.bind(ctx, fs, args, "master"); err != nil {
		return err
	}
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
