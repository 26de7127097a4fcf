package tiff

import (
	"image"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	xtiff "golang.org/x/image/tiff"
)

// The strict count stands in for the image decoder on the pages where the
// decoder would only decompress every block and copy its bytes into an
// image: 8- or 16-bit grey or RGB, chunky, in LZW, Deflate or PackBits.
// There the decoder's checks are the strict count's: every block
// decompresses without error (Deflate's checksum included) to at least the
// bytes its rows need, and (the memory budget's own check) to no more than
// its rows may hold; the image it would fill proves nothing more, as for
// uncompressed pages (see DecodeOptions.DecodeUncompressed) and for the
// pages counted instead of decoded (countInstead). The blocks are counted
// in parallel, each once, instead of counted and then decoded.
//
// Only a page whose every block passes is settled here. Any other outcome
// (a block short, corrupt, truncated, an LZW block without an end code, a
// read error) hands the page to the decoder path, which reports it exactly
// as it always has; the one exception is a block over its bound behind
// blocks that all passed, refused here with the *LimitError the decoder
// path would name it with, so that a bomb is inflated once.

// fastWorkerFixed is what one counting worker holds besides its read
// buffer: the inflater's decoder state, window and output buffer.
const fastWorkerFixed = 256 << 10

// fastReadMax is the largest block a worker reads whole (one read instead
// of a read every bufio buffer); larger blocks stream.
const fastReadMax = 1 << 20

// fastEligible reports whether the strict count may stand in for the
// decoder on p (see above): unsupported(p) is "" and the decoder accepts
// the page's configuration.
func fastEligible(r io.ReaderAt, info *TIFFInfo, p *Page) bool {
	if !inflatable(p) || viewless(info) || len(p.BlockOffsets) == 0 || unsupported(p) != "" {
		return false
	}
	if p.FillOrder == 2 {
		return false // bit-reversed before any codec: Lazaret's own block decoder's page
	}
	switch p.Photometric {
	case 0, 1, 2:
	default:
		return false // palette pages keep the decoder's colour index check
	}
	if p.Planar == 2 && p.Samples > 1 {
		return false
	}
	bps := p.BitsPerSample[0]
	if bps != 8 && bps != 16 {
		return false // 1-bit: the decoder refuses a predictor there
	}
	for _, b := range p.BitsPerSample {
		if b != bps {
			return false
		}
	}
	if p.Tiled && (p.TileWidth < 8 || p.TileLength < 8 || p.TileWidth > p.Width+16 || p.TileLength > p.Height+16) {
		return false // the decoder's own tile-size rules
	}
	if p.Compression == 5 && oldLZW(r, p) {
		return false
	}
	pr, err := newPageReader(r, info, p, nil)
	if err != nil {
		return false
	}
	cfg, err := decodeConfig(pr)
	return err == nil && uint64(cfg.Width) == p.Width && uint64(cfg.Height) == p.Height
}

func decodeConfig(pr *pageReader) (cfg image.Config, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = ErrDecoderPanic
		}
	}()
	return xtiff.DecodeConfig(pr)
}

// fastCount counts every block of p strictly, in parallel within the
// memory left (avail). done is true when the page is settled: err nil
// (every block passed) or the *LimitError of a bomb; false hands the page
// to the decoder path.
func fastCount(r io.ReaderAt, p *Page, avail int64) (done bool, err error) {
	n := len(p.BlockOffsets)
	var largest uint64
	for _, c := range p.BlockCounts {
		largest = max(largest, c)
	}
	readBuf := int64(min(largest, fastReadMax))
	perWorker := fastWorkerFixed + readBuf
	// The whole inflater (wholeFlate, or zlib with -tags zlib) inflates a
	// Deflate block whole, into a buffer of the most it may decompress to:
	// charged too, or left out (klauspost streams) when the budget is short
	// or the page's blocks may be larger than wholeOutMax.
	outBuf := int64(0)
	if p.Compression == 8 || p.Compression == 32946 {
		if b := largestBlock(p); b <= wholeOutMax && avail/(perWorker+int64(b)) >= 1 {
			outBuf = int64(b)
		}
	}
	perWorker += outBuf
	workers := min(int64(runtime.GOMAXPROCS(0)), int64(n), avail/perWorker)
	if workers < 1 {
		return false, nil
	}
	if pageBytes(p) <= fastInline {
		workers = 1 // not worth a goroutine
	}
	var (
		next  atomic.Int64
		first atomic.Int64 // lowest block that failed; n when none
		wg    sync.WaitGroup
		mu    sync.Mutex
		over  = make(map[int]bool) // failed blocks that were over their bound
	)
	first.Store(int64(n))
	work := func() {
		in := inflaterPool.Get().(*inflater)
		in.r, in.ioErr = r, nil
		in.whole = make([]byte, 0, readBuf)
		if in.lzw == nil {
			in.lzw = new(lzwTable)
		}
		if outBuf > 0 {
			if in.wi == nil {
				in.wi = newWholeInflater()
			}
			in.out = make([]byte, 0, outBuf)
		}
		defer func() {
			in.r, in.whole, in.out = nil, nil, nil
			in.wr.Reset(nil)
			if in.br != nil {
				in.br.Reset(nil)
			}
			inflaterPool.Put(in)
		}()
		for {
			i := int(next.Add(1) - 1)
			if i >= n || int64(i) > first.Load() {
				return
			}
			bound := blockBound(p, i)
			limit := blockLimit(bound)
			got, _, cerr := in.count(p, i, limit+1)
			if in.ioErr == nil && cerr == nil && got >= blockNeed(p, i) && got <= limit {
				if got > bound {
					mu.Lock()
					p.noteOverrun(i, got, bound)
					mu.Unlock()
				}
				continue
			}
			mu.Lock()
			over[i] = in.ioErr == nil && got > limit
			mu.Unlock()
			for {
				f := first.Load()
				if int64(i) >= f || first.CompareAndSwap(f, int64(i)) {
					break
				}
			}
			in.ioErr = nil
		}
	}
	if workers == 1 {
		work()
	} else {
		for w := int64(0); w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work()
			}()
		}
		wg.Wait()
	}
	f := int(first.Load())
	if f == n {
		return true, nil
	}
	if over[f] {
		return true, inflateError(p, f, blockLimit(blockBound(p, f)))
	}
	return false, nil
}

// wholeOutMax is the largest block a whole inflater inflates (its output
// buffer); pages with larger blocks stream through klauspost.
const wholeOutMax = 8 << 20

// InflateBackend names what inflates the Deflate blocks of the strict
// count in this build: "wholeFlate, klauspost/compress" (the default, pure
// Go: wholeFlate for a block read whole, klauspost for the rest), or "zlib"
// and the version of the system library (built with -tags zlib, through
// cgo). Verdicts are the same in every build; figures are not.
func InflateBackend() string { return inflateBackendName }

// fastInline: a page with no more compressed bytes than this is counted
// on the calling goroutine.
const fastInline = 256 << 10

func pageBytes(p *Page) uint64 {
	var n uint64
	for _, c := range p.BlockCounts {
		n = addSat(n, c)
	}
	return n
}

// inflaterPool keeps the decoder states of counting workers (a Deflate
// decompressor is tens of KB) across masters; each check gives its own
// read buffer, which it is charged for.
var inflaterPool = sync.Pool{New: func() any { return newInflater(nil) }}
