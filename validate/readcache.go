package validate

import (
	"errors"
	"io"
	"sync"
)

// readCacheSize is the window of a readCache: a whole small master, or the
// header and IFDs of a large one.
const readCacheSize = 64 << 10

// readCache serves small reads of a master from one window of it, read at
// once: the walk reads tag by tag, and without it a 4 KB master costs
// dozens of pread calls. It is transparent: the bytes, the errors and the
// offsets asked for are those of the file (a read error is never cached;
// the read that met it goes to the file again). Reads larger than the
// window, or outside it, go straight to the file. Safe for concurrent use.
type readCache struct {
	r    io.ReaderAt
	size int64 // the file's size at open

	mu  sync.Mutex
	buf []byte // pooled, readCacheSize
	off int64  // file offset of buf[0]
	n   int    // valid bytes in buf
	eof bool   // the file ended at off+n when the window was read
}

var readCachePool = sync.Pool{New: func() any { b := make([]byte, readCacheSize); return &b }}

func newReadCache(r io.ReaderAt, size int64) *readCache {
	return &readCache{r: r, size: size, buf: *readCachePool.Get().(*[]byte), off: -1}
}

// release returns the window to the pool; the cache reads through after.
func (c *readCache) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf != nil {
		b := c.buf
		readCachePool.Put(&b)
		c.buf, c.off, c.n = nil, -1, 0
	}
}

func (c *readCache) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || len(p) == 0 || len(p) >= readCacheSize/2 {
		return c.r.ReadAt(p, off)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf == nil {
		return c.r.ReadAt(p, off)
	}
	end := off + int64(len(p))
	if c.off < 0 || off < c.off || end > c.off+int64(c.n) && !c.eof || off > c.off+int64(c.n) {
		// Fill the window from off (from 0 for a file that fits it whole).
		start := off
		if c.size <= readCacheSize {
			start = 0
		}
		m, err := c.r.ReadAt(c.buf, start)
		if err != nil && !errors.Is(err, io.EOF) {
			c.off, c.n = -1, 0
			return c.r.ReadAt(p, off)
		}
		c.off, c.n, c.eof = start, m, err != nil
	}
	avail := c.off + int64(c.n) - off
	if avail < int64(len(p)) {
		switch {
		case !c.eof:
			return c.r.ReadAt(p, off)
		case avail <= 0:
			return 0, io.EOF
		}
		copy(p, c.buf[off-c.off:c.n])
		return int(avail), io.EOF
	}
	copy(p, c.buf[off-c.off:off-c.off+int64(len(p))])
	return len(p), nil
}

// hashBufPool holds the buffers the SHA-256 of a master of smallHashRead
// bytes or more is read through; a smaller one is read into a buffer of its
// own size.
const smallHashRead = 64 << 10

var hashBufPool = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}
