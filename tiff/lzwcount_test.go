package tiff

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"golang.org/x/image/tiff/lzw"
)

// decoderCount is what inflater.count sees through the real decoder.
func decoderCount(src []byte, limit uint64) (uint64, error) {
	lz := lzw.NewReader(bytes.NewReader(src), lzw.MSB, 8)
	defer lz.Close()
	n, err := io.Copy(io.Discard, &io.LimitedReader{R: lz, N: int64(limit)})
	return uint64(n), err
}

// TestLZWCountAsDecoder: on clean and damaged LZW strips, whenever
// lzwCount accepts a stream, golang.org/x/image/tiff/lzw accepts it too
// and yields the same number of bytes (capped at the limit alike).
func TestLZWCountAsDecoder(t *testing.T) {
	t.Parallel()
	var streams [][]byte
	for _, g := range []fixtures.Noisy{
		{Width: 2000, Height: 16, Samples: 3, RowsPerStrip: 16, Compression: 5, Seed: 1}, // the table fills and clears
		{Width: 64, Height: 8, Samples: 1, RowsPerStrip: 8, Compression: 5, Seed: 2},
	} {
		data, err := fixtures.NoisyTIFF(g)
		if err != nil {
			t.Fatal(err)
		}
		info, err := WalkTIFF(bytes.NewReader(data), int64(len(data)), DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		p := info.Pages[0]
		streams = append(streams, data[p.BlockOffsets[0]:p.BlockOffsets[0]+p.BlockCounts[0]])
	}
	// A run of one byte: long expansions, KwKwK codes.
	streams = append(streams, fixtures.LZW(bytes.Repeat([]byte{7}, 100000)))
	var tab lzwTable
	state := uint64(1)
	rnd := func(n int) int {
		state = state*6364136223846793005 + 1442695040888963407
		return int(state>>33) % n
	}
	accepted, refused := 0, 0
	for si, clean := range streams {
		want, _ := decoderCount(clean, 1<<40)
		for k := 0; k < 1200; k++ {
			s := append([]byte(nil), clean...)
			limit := uint64(1 << 40)
			switch k % 4 {
			case 0: // clean, limits around the real size
				limit = want - 1 + uint64(k%3)
			case 1:
				s[rnd(len(s))] ^= byte(1 << rnd(8))
			case 2:
				s = s[:rnd(len(s))]
			case 3:
				s[rnd(len(s))] = byte(rnd(256))
				s[rnd(len(s))] = byte(rnd(256))
			}
			got, err := lzwCount(&tab, s, limit)
			dn, derr := decoderCount(s, limit)
			if err != nil {
				if !errors.Is(err, errLZWCount) {
					t.Fatalf("stream %d case %d: %v", si, k, err)
				}
				refused++
				continue
			}
			accepted++
			if derr != nil || dn != got {
				t.Fatalf("stream %d case %d: lzwCount %d bytes, clean; the decoder %d bytes, %v", si, k, got, dn, derr)
			}
		}
	}
	if accepted == 0 || refused == 0 {
		t.Fatalf("accepted %d, refused %d: the damage does not exercise both", accepted, refused)
	}
}
