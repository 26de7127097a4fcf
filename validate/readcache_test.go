package validate

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

type countReads struct {
	r     io.ReaderAt
	calls atomic.Int64
}

func (c *countReads) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	return c.r.ReadAt(p, off)
}

// TestReadCacheTransparent: every read through the cache returns the
// bytes, count and error the file itself returns, for files smaller and
// larger than its window.
func TestReadCacheTransparent(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 1, 4000, readCacheSize, readCacheSize + 1, 3*readCacheSize + 17} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		file := bytes.NewReader(data)
		c := newReadCache(file, int64(size))
		state := uint64(size) + 1
		rnd := func(n int) int {
			state = state*6364136223846793005 + 1442695040888963407
			return int(state>>33) % n
		}
		for k := 0; k < 5000; k++ {
			off := int64(rnd(size + 100))
			n := rnd(64)
			if k%50 == 0 {
				n = rnd(readCacheSize)
			}
			want := make([]byte, n)
			got := make([]byte, n)
			wn, werr := file.ReadAt(want, off)
			gn, gerr := c.ReadAt(got, off)
			if wn != gn || !errors.Is(gerr, werr) || !bytes.Equal(want[:wn], got[:gn]) {
				t.Fatalf("size %d: ReadAt(%d bytes, %d) = %d, %v; the file says %d, %v", size, n, off, gn, gerr, wn, werr)
			}
		}
		c.release()
	}
}

// TestSmallMasterReadsOnce: walking and checking a 4 KB master through
// the cache reads the file once, not once a tag.
func TestSmallMasterReadsOnce(t *testing.T) {
	t.Parallel()
	for _, comp := range []int{1, 5, 8, 32773} {
		data, err := fixtures.NoisyTIFF(fixtures.Noisy{Width: 36, Height: 36, Samples: 3, Compression: comp, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		file := &countReads{r: bytes.NewReader(data)}
		c := newReadCache(file, int64(len(data)))
		info, err := tiff.WalkTIFF(c, int64(len(data)), tiff.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tiff.DecodePages(c, info, tiff.DecodeOptions{PixelBudget: 1 << 20, DecodeUncompressed: true}); err != nil {
			t.Fatal(err)
		}
		c.release()
		if n := file.calls.Load(); n > 2 {
			t.Errorf("compression %d: %d reads of a %d-byte file", comp, n, len(data))
		}
	}
}

// TestSmallMasterAllocatesLittle: checking a 4 KB master right after a
// garbage collection (which empties the pools) allocates a few hundred
// kilobytes at most, not the megabyte the SHA-256 of a large master is
// read through.
func TestSmallMasterAllocatesLittle(t *testing.T) {
	data, err := fixtures.NoisyTIFF(fixtures.Noisy{Width: 36, Height: 36, Samples: 3, Compression: 1, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.tif")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	pol := DefaultMasterPolicy()
	if _, err := CheckMaster(context.Background(), path, nil, pol); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	for range 3 {
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := CheckMaster(context.Background(), path, nil, pol); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 512<<10 {
			t.Fatalf("a %d-byte master checked after a collection allocated %d bytes", len(data), n)
		}
	}
}
