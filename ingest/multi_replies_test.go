package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEachInterchangeGetsItsOwnCONTRL: a file of two interchanges whose
// UNBs both ask for an acknowledgement (0031 = 1) gets two CONTRL reports,
// each answering its own interchange (its reference, its sender) under a
// reference of its own; the second's file is named .i2.contrl.edi.
func TestEachInterchangeGetsItsOwnCONTRL(t *testing.T) {
	t.Parallel()
	w, good := contrlSetup(t, "edi-iftmin-good")
	data, err := os.ReadFile(good.Path)
	if err != nil {
		t.Fatal(err)
	}
	asks := strings.Replace(string(data), "+IC0002'", "+IC0002++++1'", 1)
	second := strings.ReplaceAll(strings.Replace(asks, "CARRIER1", "CARRIER2", 1), "IC0002", "IC0099")
	file := asks + second
	path := filepath.Join(filepath.Dir(good.Path), "two-asks.edi")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(file))
	env := *good
	env.Path, env.ObjectID, env.SHA256 = path, "edi-two-asks", hex.EncodeToString(sum[:])
	env.Item.SHA256, env.Item.Size, env.SubmittedAt = env.SHA256, int64(len(file)), time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	r := w.execute(context.Background(), &delivery{env: &env, attempt: 1})
	if !r.perMessage || !r.replies || r.cause != nil {
		t.Fatalf("perMessage %v replies %v: %v", r.perMessage, r.replies, r.cause)
	}
	sent, err := w.writeReplies(context.Background(), &env, r.ires, r.cause, 1)
	if err != nil {
		t.Fatal(err)
	}
	files := contrlFiles(t, w)
	first, later := files[contrlName(&env, 1)], files[replyName(&env, 1, "i2.contrl")]
	if len(files) != 2 || sent.contrl != contrlName(&env, 1) || sent.later[2] == nil || sent.later[2].contrl != replyName(&env, 1, "i2.contrl") {
		t.Fatalf("CONTRL files %v, sent %+v", files, sent)
	}
	if !strings.Contains(first, "UCI+IC0002+CARRIER1:ZZ+LAZARET:ZZ+7'") || strings.Contains(first, "IC0099") {
		t.Errorf("the first interchange's CONTRL:\n%s", first)
	}
	if !strings.Contains(later, "UCI+IC0099+CARRIER2:ZZ+LAZARET:ZZ+7'") || strings.Contains(later, "IC0002") {
		t.Errorf("the second interchange's CONTRL:\n%s", later)
	}
	if contrlRef("", &env, 1) == contrlRefIn("", &env, 1, 2) || !strings.Contains(later, contrlRefIn("", &env, 1, 2)) {
		t.Errorf("the two CONTRL share a reference or the second lacks its own: %s", later)
	}
}
