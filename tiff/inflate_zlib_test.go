//go:build zlib && cgo

package tiff

import (
	"bytes"
	"compress/zlib"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// A wholeInflater's z_stream is freed by a cleanup once the inflater is
// unreachable. A caller that drops the inflater right after the call (as
// countBoth did) leaves nothing but the C pointer alive during inflate, so
// without the KeepAlive in zlib the cleanup could free the stream while
// zlib was inside it: a SIGSEGV in cgo, seen in CI. Here every call is on
// an inflater nobody holds, with the collector running all the time.
func TestWholeInflaterOutlivesItsCall(t *testing.T) {
	raw := make([]byte, 4<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range raw {
		raw[i] = byte(r.IntN(16)) // compressible, and slow enough to inflate
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	src := z.Bytes()
	out := make([]byte, len(raw))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	for i := range 24 {
		n, used, ok := newWholeInflater().zlib(src, out)
		if !ok || n != len(raw) || used != len(src) {
			t.Fatalf("call %d: n %d used %d ok %v, want %d, %d, true", i, n, used, ok, len(raw), len(src))
		}
	}
	if !bytes.Equal(out, raw) {
		t.Fatal("inflated bytes differ from the original")
	}
}
