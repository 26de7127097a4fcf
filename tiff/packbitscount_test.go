package tiff

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestPackBitsCountAsReader: on random PackBits data, packBitsCount
// accepts a block exactly when the PackBits reader reads it without error,
// and counts the bytes it yields, capped at the limit alike.
func TestPackBitsCountAsReader(t *testing.T) {
	t.Parallel()
	state := uint64(3)
	rnd := func(n int) int {
		state = state*6364136223846793005 + 1442695040888963407
		return int(state>>33) % n
	}
	accepted, refused := 0, 0
	for k := 0; k < 20000; k++ {
		src := make([]byte, rnd(300))
		for i := range src {
			src[i] = byte(rnd(256))
		}
		limit := uint64(1 << 40)
		if k%3 == 0 {
			limit = uint64(rnd(2000))
		}
		got, err := packBitsCount(src, limit)
		pb := &packBits{r: bytes.NewReader(src)}
		n, rerr := io.Copy(io.Discard, &io.LimitedReader{R: pb, N: int64(limit)})
		if err != nil {
			if !errors.Is(err, errPackBitsCount) || rerr == nil {
				t.Fatalf("case %d: count refused (%v), the reader says %d bytes, %v", k, err, n, rerr)
			}
			refused++
			continue
		}
		accepted++
		if rerr != nil || uint64(n) != got {
			t.Fatalf("case %d: count %d bytes, clean; the reader %d bytes, %v", k, got, n, rerr)
		}
	}
	if accepted == 0 || refused == 0 {
		t.Fatalf("accepted %d, refused %d", accepted, refused)
	}
}
