package premis_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
)

func signed(t testing.TB, key ed25519.PrivateKey, count int64) []byte {
	t.Helper()
	c := &premis.Checkpoint{Ledger: strings.Repeat("a", 64), Status: premis.CheckpointHead, Count: count, Seq: count, Hash: strings.Repeat("b", 64),
		Time: time.Date(2026, 12, 2, 6, 0, 0, 123456789, time.UTC)}
	c.Sign(key)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestReadCheckpoints: every line that is not a valid signed entry is a
// problem naming its line; the others are read.
func TestReadCheckpoints(t *testing.T) {
	t.Parallel()
	key, _ := premis.GenerateCheckpointKey()
	pub := key.Public().(ed25519.PublicKey)
	good := signed(t, key, 4)
	changed := bytes.Replace(signed(t, key, 5), []byte(`"count":5`), []byte(`"count":50`), 1)
	var log bytes.Buffer
	log.Write(good)                                   // line 1
	log.WriteString("not json\n")                     // line 2
	log.Write(changed)                                // line 3: a field changed after signing
	log.WriteString(strings.Repeat("x", 5000) + "\n") // line 4: too long
	log.WriteString(`{"status":"maybe"}` + "\n")      // line 5
	log.Write(signed(t, key, 6))                      // line 6
	log.Write(good[:40])                              // line 7: cut short
	cps, err := premis.ReadCheckpoints(&log, "log", pub)
	if err != nil {
		t.Fatal(err)
	}
	if cps.Lines != 7 || len(cps.Entries) != 2 || cps.Newest().Count != 6 || cps.Newest().Line != 6 {
		t.Fatalf("lines %d, entries %+v", cps.Lines, cps.Entries)
	}
	want := map[int]string{2: "not a checkpoint entry", 3: "signature does not verify", 4: "longer than", 5: "status", 7: "cut short"}
	if len(cps.Problems) != len(want) {
		t.Errorf("problems: %v", cps.Problems)
	}
	for _, p := range cps.Problems {
		var le *premis.CheckpointLineError
		if !errors.As(p, &le) || !strings.Contains(p.Error(), want[le.Line]) || !strings.Contains(p.Error(), "line ") {
			t.Errorf("problem %v: want line %d naming %q", p, le.Line, want[le.Line])
		}
	}
	if errors.Is(cps.Problems[1], premis.ErrCheckpointSignature) != true {
		t.Errorf("line 3: %v, want ErrCheckpointSignature", cps.Problems[1])
	}
}

func TestCheckpointKeyRoundTrip(t *testing.T) {
	t.Parallel()
	key, _ := premis.GenerateCheckpointKey()
	b, err := premis.MarshalCheckpointKey(key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := premis.ParseCheckpointKey(b)
	if err != nil || !got.Equal(key) {
		t.Fatalf("parse: %v", err)
	}
	pub, err := premis.ParseCheckpointPublicKey(premis.EncodeCheckpointPublicKey(key.Public().(ed25519.PublicKey)) + "\n")
	if err != nil || !pub.Equal(key.Public()) {
		t.Fatalf("public key: %v", err)
	}
	if _, err := premis.ParseCheckpointPublicKey("AAAA"); err == nil {
		t.Error("a 3-byte public key was read")
	}
	if _, err := premis.ParseCheckpointKey([]byte("garbage")); err == nil {
		t.Error("garbage was read as a key")
	}
}

// FuzzReadCheckpoints: any log reads without a panic, and every problem
// names a line of it.
func FuzzReadCheckpoints(f *testing.F) {
	key, _ := premis.GenerateCheckpointKey()
	seeds := testenv.NewSeeds(f)
	seeds.Add(signed(f, key, 3)) // a key of its own: committed, its signatures no longer verify
	seeds.Add([]byte("{}\n{\"status\":\"head\"}"))
	seeds.Add([]byte("\n\n\n"))
	pub := key.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, b []byte) {
		cps, err := premis.ReadCheckpoints(bytes.NewReader(b), "log", pub)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range cps.Problems {
			var le *premis.CheckpointLineError
			if !errors.As(p, &le) || le.Line < 1 || le.Line > cps.Lines {
				t.Fatalf("problem %v of %d lines", p, cps.Lines)
			}
		}
	})
}
