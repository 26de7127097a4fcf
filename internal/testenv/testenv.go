// Package testenv finds what tests need outside the repository: the shared
// third-party corpus, a real Redis, xmllint. Where a service is missing, a
// test fails under CI (CI=true) and skips, saying why, elsewhere.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// InCI reports whether the tests run under CI.
func InCI() bool { return os.Getenv("CI") == "true" }

// RepoRoot is the folder holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testenv: no go.mod above the test's folder")
		}
		dir = parent
	}
}

// Corpus returns ../shared/corpus/<sub> beside the repository, or skips the
// test with a clear message when the shared corpus is absent.
func Corpus(t testing.TB, sub ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{RepoRoot(t), "..", "shared", "corpus"}, sub...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared corpus not found at %s (it lives beside the repository as ../shared): %v", p, err)
	}
	return p
}

// RedisAddr is the test Redis address: LAZARET_TEST_REDIS or 127.0.0.1:6379.
func RedisAddr() string {
	if a := os.Getenv("LAZARET_TEST_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// Redis checks that the test Redis answers and empties database db, which
// belongs to the calling package's tests alone (packages run in parallel).
func Redis(t testing.TB, db int) string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: RedisAddr(), DB: db})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if InCI() {
			t.Fatalf("redis at %s is required in CI: %v", RedisAddr(), err)
		}
		t.Skipf("no redis at %s (set LAZARET_TEST_REDIS): %v", RedisAddr(), err)
	}
	if err := c.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	return "redis://" + RedisAddr() + "/" + strconv.Itoa(db)
}

// XMLLint returns the path of xmllint, failing under CI and skipping
// elsewhere when it is not installed.
func XMLLint(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("xmllint")
	if err != nil {
		if InCI() {
			t.Fatal("xmllint (Debian libxml2-utils) is required in CI")
		}
		t.Skip("xmllint not installed (apt-get install libxml2-utils)")
	}
	return p
}

// ValidatePREMIS validates the XML file at path against the official
// premis.xsd from the shared corpus.
func ValidatePREMIS(t testing.TB, path string) {
	t.Helper()
	lint := XMLLint(t)
	xsd := filepath.Join(Corpus(t, "premis"), "premis.xsd")
	out, err := exec.Command(lint, "--noout", "--schema", xsd, path).CombinedOutput()
	if err != nil {
		t.Fatalf("%s does not validate against premis.xsd: %v\n%s", path, err, out)
	}
}

// Chromium returns the path of a headless-capable Chromium, failing under
// CI and skipping elsewhere when it is not installed.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if InCI() {
		t.Fatal("chromium (Debian package chromium) is required in CI")
	}
	t.Skip("chromium not installed (apt-get install chromium)")
	return ""
}

// Headless runs Chromium headless on url with extra arguments (such as
// --dump-dom or --screenshot=PATH), letting the page's scripts run for up
// to budget of virtual time, and returns standard output.
func Headless(t testing.TB, url string, budget time.Duration, args ...string) []byte {
	t.Helper()
	bin := Chromium(t)
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=" + strconv.Itoa(int(budget/time.Millisecond)), "--window-size=1400,1000"}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), url)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v", args, err)
	}
	return out
}

// PostgresDSN is the test PostgreSQL: LAZARET_TEST_POSTGRES or the local
// server with trust authentication.
func PostgresDSN() string {
	if d := os.Getenv("LAZARET_TEST_POSTGRES"); d != "" {
		return d
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Postgres creates a fresh schema for one test and returns a DSN whose
// search_path points at it; the schema is dropped afterwards. Fails under CI
// and skips elsewhere when PostgreSQL does not answer.
func Postgres(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, PostgresDSN())
	if err != nil {
		if InCI() {
			t.Fatalf("PostgreSQL (%s) is required in CI: %v", PostgresDSN(), err)
		}
		t.Skipf("no PostgreSQL at %s (set LAZARET_TEST_POSTGRES): %v", PostgresDSN(), err)
	}
	defer conn.Close(context.Background())
	name := fmt.Sprintf("lazaret_test_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), PostgresDSN())
		if err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+name+" CASCADE")
			c.Close(context.Background())
		}
	})
	sep := "?"
	if strings.Contains(PostgresDSN(), "?") {
		sep = "&"
	}
	return PostgresDSN() + sep + "search_path=" + name
}
