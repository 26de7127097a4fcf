package tiff_test

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
)

// FuzzFastCountAsDecoder: on any input the walk accepts, the strict count
// (the default) and the image decoder (DecodeUncompressed) give the same
// verdict: the same error, skipped pages and warnings.
func FuzzFastCountAsDecoder(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	for _, c := range []int{5, 8, 32773} {
		for _, g := range []fixtures.Noisy{
			{Width: 23, Height: 17, Samples: 3, RowsPerStrip: 5, Seed: 1},
			{Width: 16, Height: 9, Samples: 1, RowsPerStrip: 9, Seed: 2},
		} {
			g.Compression = c
			data, err := fixtures.NoisyTIFF(g)
			if err != nil {
				f.Fatal(err)
			}
			seeds.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits); err != nil {
			return
		}
		run := func(decoder bool) (string, []*tiff.UnsupportedError, []tiff.Warning, error) {
			info, _ := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
			skipped, err := tiff.DecodePages(bytes.NewReader(data), info, tiff.DecodeOptions{PixelBudget: 1 << 20, DecodeUncompressed: decoder})
			return fmt.Sprint(err), skipped, info.Warnings, err
		}
		fs, fskip, fwarn, ferr := run(false)
		ds, dskip, dwarn, derr := run(true)
		if fs != ds || !reflect.DeepEqual(ferr, derr) {
			t.Fatalf("count says %v, decoder says %v", ferr, derr)
		}
		if !reflect.DeepEqual(fskip, dskip) || !reflect.DeepEqual(fwarn, dwarn) {
			t.Fatalf("count skipped %v warned %v; decoder skipped %v warned %v", fskip, fwarn, dskip, dwarn)
		}
	})
}
