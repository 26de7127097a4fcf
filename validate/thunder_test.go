package validate_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// TestThunderScanMasterShortStrip: a ThunderScan (32809) master whose
// second strip ends 10 codes early is not accepted (short data at that
// strip, structural), while its sound twin is, with nothing left not
// decoded. Before, both were accepted with tiff.not-decoded.
func TestThunderScanMasterShortStrip(t *testing.T) {
	t.Parallel()
	// One 16-pixel row: a raw pixel, three 2-bit deltas, two 3-bit
	// deltas, a run of 10.
	row := []byte{0xc7, 0x53, 0x9e, 10}
	strip := bytes.Repeat(row, 4)
	write := func(name string, second []byte) (string, int64) {
		var b bytes.Buffer
		lay, err := fixtures.WriteDirs(&b, []*fixtures.Dir{fixtures.Image(16, 8, 1, 4, 32809, 1, 4, 0, 0, [][]byte{strip, second})})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path, lay.Blocks["page 1"][1]
	}
	pol := validate.DefaultMasterPolicy()
	sound, _ := write("sound.tif", strip)
	rep, err := validate.CheckMaster(context.Background(), sound, nil, pol)
	if err != nil || rep.Decoded != 1 {
		t.Fatalf("sound twin: %v (decoded %d)", err, rep.Decoded)
	}
	for _, w := range rep.Warnings {
		if w.Code == "tiff.not-decoded" {
			t.Errorf("sound twin: %+v", w)
		}
	}
	short, at := write("short.tif", strip[:len(strip)-10])
	_, err = validate.CheckMaster(context.Background(), short, nil, pol)
	var fe *tiff.FormatError
	if !errors.As(err, &fe) || !errors.Is(err, tiff.ErrShortData) || fe.Offset != at || fe.Page != 1 {
		t.Fatalf("10 codes short: %v, want short data at byte %d", err, at)
	}
}

// TestUnknownCompressionMaster: a master in a compression no decoder
// knows (52479) is accepted with tiff.not-decoded under today's policy;
// a policy that refuses what is not decoded refuses it.
func TestUnknownCompressionMaster(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if _, err := fixtures.WriteDirs(&b, []*fixtures.Dir{fixtures.Image(8, 8, 1, 8, 52479, 1, 8, 0, 0, [][]byte{make([]byte, 40)})}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "private.tif")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := validate.DefaultMasterPolicy()
	rep, err := validate.CheckMaster(context.Background(), path, nil, pol)
	if err != nil || rep.Decoded != 0 {
		t.Fatalf("compression 52479: %v", err)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || w.Code == "tiff.not-decoded"
	}
	if !found {
		t.Errorf("no tiff.not-decoded warning: %+v", rep.Warnings)
	}
	pol.Undecodable = "reject"
	var pe *validate.PolicyError
	if _, err := validate.CheckMaster(context.Background(), path, nil, pol); !errors.As(err, &pe) || pe.Code != "policy.undecodable" {
		t.Errorf("refused as undecodable: %v", err)
	}
}
