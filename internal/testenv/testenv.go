// Package testenv finds what tests need outside the repository: the shared
// third-party corpus, a real Redis (a redis-server of the test binary's
// own, or LAZARET_TEST_REDIS), PostgreSQL, xmllint, Chromium. Where one is
// missing, a test fails under CI (CI=true) and skips, saying why, elsewhere.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// Corpus returns ../shared/corpus/<sub> beside the repository. When the
// shared corpus is absent the test fails under CI and skips, saying why,
// elsewhere.
func Corpus(t testing.TB, sub ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{RepoRoot(t), "..", "shared", "corpus"}, sub...)...)
	if _, err := os.Stat(p); err != nil {
		if InCI() {
			t.Fatalf("shared corpus is required in CI, not found at %s (it lives beside the repository as ../shared): %v", p, err)
		}
		t.Skipf("shared corpus not found at %s (it lives beside the repository as ../shared): %v", p, err)
	}
	return p
}

// The tests' Redis. Unless LAZARET_TEST_REDIS names a server, each test
// binary starts its own redis-server (once, on a free loopback port, with no
// persistence) and may empty its databases at will. A server named by
// LAZARET_TEST_REDIS is someone else's: testenv never flushes a database
// there that it did not fill itself (see Redis).

// EnvRedis names an existing Redis (host:port) for the tests to use instead
// of a private redis-server.
const EnvRedis = "LAZARET_TEST_REDIS"

// ownerKey marks a database of a LAZARET_TEST_REDIS server as filled by a
// lazaret test binary; its value is "host pid" of that binary.
const ownerKey = "lazaret:testenv:owner"

var (
	sharedOnce sync.Once
	shared     *redisProc
	sharedErr  error

	claimedMu sync.Mutex
	claimed   = map[int]bool{} // databases of the LAZARET_TEST_REDIS server this binary owns
)

// RedisAddr is the tests' Redis address: LAZARET_TEST_REDIS if set, else the
// private redis-server of this test binary, started on first use. It is ""
// when that server cannot be started; Redis says why.
func RedisAddr() string {
	if a := os.Getenv(EnvRedis); a != "" {
		return a
	}
	if p, err := privateRedis(); err == nil {
		return p.addr
	}
	return ""
}

func privateRedis() (*redisProc, error) {
	sharedOnce.Do(func() {
		reapStaleDirs()
		var dir string
		dir, sharedErr = os.MkdirTemp("", fmt.Sprintf("%s%d-", sharedDirPrefix, os.Getpid()))
		if sharedErr != nil {
			return
		}
		shared, sharedErr = startRedis(dir, nil)
		if sharedErr != nil {
			os.RemoveAll(dir)
		}
	})
	return shared, sharedErr
}

// Redis returns redis://host:port/db for database db, empty, which belongs
// to the calling package's tests alone (packages run in parallel against
// one LAZARET_TEST_REDIS server, each in its own database).
//
// On the private redis-server the database is flushed. On a
// LAZARET_TEST_REDIS server the first call in a test binary requires db to
// be empty, or to hold only what an earlier, finished lazaret test run on
// this host left there; anything else fails the test instead of being
// flushed. Later calls flush what this binary wrote.
func Redis(t testing.TB, db int) string {
	t.Helper()
	addr := os.Getenv(EnvRedis)
	if addr == "" {
		p, err := privateRedis()
		if err != nil {
			if errors.Is(err, exec.ErrNotFound) {
				if InCI() {
					t.Fatalf("redis-server is required in CI: %v", err)
				}
				t.Skipf("redis-server not installed (apt-get install redis-server, or set %s=host:port): %v", EnvRedis, err)
			}
			t.Fatalf("testenv: starting a private redis-server: %v", err)
		}
		addr = p.addr
	}
	c := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if InCI() {
			t.Fatalf("redis at %s is required in CI: %v", addr, err)
		}
		t.Skipf("no redis at %s (%s): %v", addr, EnvRedis, err)
	}
	if os.Getenv(EnvRedis) == "" {
		if err := c.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	} else {
		claimDB(ctx, t, c, addr, db)
	}
	return "redis://" + addr + "/" + strconv.Itoa(db)
}

// claimDB empties database db of the LAZARET_TEST_REDIS server only when
// this binary, or an earlier finished lazaret test run on this host, filled
// it; otherwise it fails the test.
func claimDB(ctx context.Context, t testing.TB, c *redis.Client, addr string, db int) {
	t.Helper()
	host, _ := os.Hostname()
	me := host + " " + strconv.Itoa(os.Getpid())
	claimedMu.Lock()
	defer claimedMu.Unlock()
	if !claimed[db] {
		n, err := c.DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			owner, err := c.Get(ctx, ownerKey).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatal(err)
			}
			if !leftover(owner, host) {
				why := "keys testenv did not create"
				if owner != "" {
					why = "keys of the lazaret test run " + strconv.Quote(owner) + ", still running or on another host"
				}
				t.Fatalf("redis %s database %d holds %d %s; testenv will not flush it. "+
					"Empty it yourself, point %s at a free server, or unset %s to let the tests start their own redis-server",
					addr, db, n, why, EnvRedis, EnvRedis)
			}
			t.Logf("testenv: redis %s database %d: flushing what the finished test run %q left", addr, db, owner)
		}
		claimed[db] = true
	}
	if err := c.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, ownerKey, me, 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// leftover reports whether owner ("host pid", from ownerKey) names a lazaret
// test binary on this host that has exited.
func leftover(owner, host string) bool {
	h, pid, ok := strings.Cut(owner, " ")
	if !ok || h != host {
		return false
	}
	n, err := strconv.Atoi(pid)
	return err == nil && n != os.Getpid() && !alive(n)
}

// OwnRedis returns redis://host:port/db of a Redis that the calling test
// has to itself, so that tests which each take one may call t.Parallel():
// asynq keeps every key under "asynq:", with no prefix of a test's own, so
// two tests in one database would read each other's queues.
//
// Unless LAZARET_TEST_REDIS names a server, that is a fresh redis-server
// of the test's own (RedisServer: a free loopback port, no persistence,
// killed at the test's end), database 0. A server named by
// LAZARET_TEST_REDIS is someone else's and no new database there is
// known to be free: the test gets database db (see Redis) and holds it
// until its end, so the tests of one binary that share db wait for each
// other there, one at a time, even when parallel.
func OwnRedis(t testing.TB, db int) string {
	t.Helper()
	if os.Getenv(EnvRedis) == "" {
		addr, _ := RedisServer(t)
		return "redis://" + addr + "/0"
	}
	heldMu.Lock()
	slot, ok := held[db]
	if !ok {
		slot = make(chan struct{}, 1)
		held[db] = slot
	}
	heldMu.Unlock()
	slot <- struct{}{}
	// Registered before anything the test adds: released after the
	// test's own cleanups (its workers stopped) have run.
	t.Cleanup(func() { <-slot })
	return Redis(t, db)
}

var (
	heldMu sync.Mutex
	held   = map[int]chan struct{}{} // database of LAZARET_TEST_REDIS -> held by one test (OwnRedis)
)

// RedisServer starts a fresh redis-server for one test alone (fault tests
// that kill or restart Redis), on a free loopback port with no persistence
// and its own t.TempDir as --dir, then args: later arguments override
// earlier ones, so "--appendonly", "yes" turns the append-only file on, and
// "--port", P with "--dir", D restarts a stopped server on its old port and
// data. stop kills the server with SIGKILL, like a crash, and waits for it
// to exit; it runs at the end of the test anyway. Fails under CI and skips
// elsewhere when redis-server is not installed.
func RedisServer(t testing.TB, args ...string) (addr string, stop func()) {
	t.Helper()
	p, err := startRedis(t.TempDir(), args)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			if InCI() {
				t.Fatalf("redis-server is required in CI: %v", err)
			}
			t.Skipf("redis-server not installed (apt-get install redis-server): %v", err)
		}
		t.Fatalf("testenv: starting redis-server %v: %v", args, err)
	}
	t.Cleanup(p.stop)
	return p.addr, p.stop
}

// redisProc is a redis-server child of the test binary.
type redisProc struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the server has exited
	log    *tailBuffer
	once   sync.Once
}

func (p *redisProc) stop() {
	p.once.Do(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
}

// startRedis runs redis-server in the foreground on 127.0.0.1, on a free
// port unless extra names one, and waits until it answers PING.
func startRedis(dir string, extra []string) (*redisProc, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	fixedPort := argValue(extra, "--port")
	var lastErr error
	for try := 0; try < 5; try++ {
		port := fixedPort
		if port == "" {
			if port, err = freePort(); err != nil {
				return nil, err
			}
		}
		p, err := launchRedis(bin, port, dir, extra)
		if err == nil {
			return p, nil
		}
		lastErr = err
		if fixedPort != "" {
			break // the caller's port: nothing to retry with
		}
		// Another process may have taken the free port first: pick again.
	}
	return nil, lastErr
}

func launchRedis(bin, port, dir string, extra []string) (*redisProc, error) {
	args := append([]string{
		"--port", port, "--bind", "127.0.0.1", "--daemonize", "no",
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", "",
	}, extra...)
	p := &redisProc{
		addr:   net.JoinHostPort("127.0.0.1", port),
		cmd:    exec.Command(bin, args...),
		exited: make(chan struct{}),
		log:    &tailBuffer{max: 8 << 10},
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{}
	setDeathSignal(p.cmd.SysProcAttr)
	started := make(chan error, 1)
	go func() {
		// The parent-death signal follows the thread that started the
		// child, not the process: keep this goroutine on its thread for as
		// long as the server runs, so the thread outlives it.
		runtime.LockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := c.Info(ctx, "server").Result()
		cancel()
		if err == nil {
			// Make sure the server answering is this one, not another that
			// took the port between freePort and the bind.
			if strings.Contains(info, "process_id:"+strconv.Itoa(p.cmd.Process.Pid)+"\r\n") {
				return p, nil
			}
			err = fmt.Errorf("another server answers on port %s", port)
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("redis-server on port %s exited: %s", port, p.log.String())
		default:
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("redis-server on port %s did not answer: %v\n%s", port, err, p.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// setDeathSignal asks the kernel to SIGKILL the child when the test binary
// dies, however it dies. The field exists on Linux only; it is set by name
// so that this file builds elsewhere too (where a crashed test binary may
// leave its redis-server behind).
func setDeathSignal(a *syscall.SysProcAttr) {
	if f := reflect.ValueOf(a).Elem().FieldByName("Pdeathsig"); f.IsValid() && f.CanSet() {
		f.Set(reflect.ValueOf(syscall.SIGKILL))
	}
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// argValue returns the value after the last occurrence of name in args.
func argValue(args []string, name string) string {
	v := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			v = args[i+1]
		}
	}
	return v
}

// sharedDirPrefix names the folders of the private servers under
// os.TempDir(), followed by the pid of the test binary.
const sharedDirPrefix = "lazaret-test-redis-"

// reapStaleDirs removes the (empty: no persistence) folders that private
// servers of exited test binaries left: a test binary cannot run code at
// its exit.
func reapStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), sharedDirPrefix+"*"))
	for _, d := range dirs {
		pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), sharedDirPrefix), "-")
		if n, err := strconv.Atoi(pid); err == nil && n != os.Getpid() && !alive(n) {
			os.RemoveAll(d)
		}
	}
}

// alive reports whether process pid exists (on this host).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// tailBuffer keeps the last max bytes written to it: a server's log for an
// error message.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
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

// SystemPython is the Debian python3 that python3-lxml installs for
// (another python3 may come first on PATH).
const SystemPython = "/usr/bin/python3"

// ArchivematicaSchematron applies Archivematica's METS schematron (from the
// shared corpus: AGPL, read at test time, never copied into the
// repository) to the METS file at path with lxml.isoschematron (Debian
// python3-lxml), through schematron.py beside this file. It returns the
// failed asserts, one "location: text" each. Without the corpus or lxml it
// fails under CI and skips elsewhere.
func ArchivematicaSchematron(t testing.TB, path string) []string {
	t.Helper()
	sch := filepath.Join(Corpus(t, "archivematica-mets"), "archivematica_mets_schematron.xml")
	if err := exec.Command(SystemPython, "-c", "import lxml.isoschematron").Run(); err != nil {
		if InCI() {
			t.Fatalf("%s with lxml (Debian python3-lxml) is required in CI: %v", SystemPython, err)
		}
		t.Skipf("%s cannot import lxml.isoschematron (apt-get install python3-lxml): %v", SystemPython, err)
	}
	script := filepath.Join(RepoRoot(t), "internal", "testenv", "schematron.py")
	var stdout, stderr strings.Builder
	cmd := exec.Command(SystemPython, script, sch, path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("schematron.py %s: %v\n%s", path, err, stderr.String())
	}
	var fails []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if line != "" {
			fails = append(fails, line)
		}
	}
	if err != nil && len(fails) == 0 {
		t.Fatalf("schematron.py %s failed and named no assert:\n%s", path, stderr.String())
	}
	t.Logf("schematron: %s", strings.TrimSpace(stderr.String()))
	return fails
}

// ArchivematicaImport runs Archivematica's own job that imports a
// transfer's metadata/premis.xml (load_premis_events_from_xml.py with
// metsrw, from ../shared/tools/archivematica-import: AGPL, run at test
// time, never copied into the repository) on the PREMIS document at
// premisPath, for a transfer whose objects/ folder is objectsDir. It
// returns whether the job succeeded with at least minEvents events
// imported, and what it printed. It fails the test under CI, and skips
// elsewhere, when the tool or Debian's python3-lxml is missing.
func ArchivematicaImport(t testing.TB, premisPath, objectsDir string, minEvents int) (ok bool, out string) {
	t.Helper()
	tool := filepath.Join(RepoRoot(t), "..", "shared", "tools", "archivematica-import", "am-import")
	if _, err := os.Stat(tool); err != nil {
		if InCI() {
			t.Fatalf("Archivematica's import tool is required in CI, not found at %s (it lives beside the repository in ../shared/tools): %v", tool, err)
		}
		t.Skipf("Archivematica's import tool not found at %s: %v", tool, err)
	}
	if err := exec.Command(SystemPython, "-c", "import lxml.etree").Run(); err != nil {
		if InCI() {
			t.Fatalf("%s with lxml (Debian python3-lxml) is required in CI: %v", SystemPython, err)
		}
		t.Skipf("%s cannot import lxml (apt-get install python3-lxml): %v", SystemPython, err)
	}
	cmd := exec.Command(SystemPython, tool, premisPath, objectsDir, "--min-events="+strconv.Itoa(minEvents))
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("am-import %s: %v\n%s", premisPath, err, b)
	}
	return err == nil, string(b)
}

// ValidateMETS fails the test when the METS document at path does not
// validate (CheckMETS).
func ValidateMETS(t testing.TB, path string) {
	t.Helper()
	if err := CheckMETS(t, path); err != nil {
		t.Fatal(err)
	}
}

// CheckMETS validates the METS document at path against METS 1.12's
// mets.xsd (the copy metsrw ships, in ../shared/tools/archivematica-import)
// and the PREMIS it wraps against the corpus's premis.xsd, offline: the
// XLink schema mets.xsd imports from www.loc.gov is resolved, through an
// XML catalog, to internal/testenv/xlink/xlink.xsd, which declares
// xlink:href an xs:anyURI as XLink 1.1 does. It returns what xmllint
// said of a document that does not validate.
func CheckMETS(t testing.TB, path string) error {
	t.Helper()
	lint := XMLLint(t)
	mets := filepath.Join(RepoRoot(t), "..", "shared", "tools", "archivematica-import", "metsrw-0.5.1", "metsrw", "resources", "mets.xsd")
	if _, err := os.Stat(mets); err != nil {
		if InCI() {
			t.Fatalf("mets.xsd is required in CI, not found at %s (../shared/tools beside the repository): %v", mets, err)
		}
		t.Skipf("mets.xsd not found at %s: %v", mets, err)
	}
	premisXSD := filepath.Join(Corpus(t, "premis"), "premis.xsd")
	xlink := filepath.Join(RepoRoot(t), "internal", "testenv", "xlink", "xlink.xsd")
	dir := t.TempDir()
	both := filepath.Join(dir, "mets-and-premis.xsd")
	catalog := filepath.Join(dir, "catalog.xml")
	fileURI := func(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }
	if err := os.WriteFile(both, []byte(`<?xml version="1.0"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:lazaret:test:mets-and-premis">
  <xs:import namespace="http://www.loc.gov/METS/" schemaLocation="`+fileURI(mets)+`"/>
  <xs:import namespace="http://www.loc.gov/premis/v3" schemaLocation="`+fileURI(premisXSD)+`"/>
</xs:schema>
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(catalog, []byte(`<?xml version="1.0"?>
<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">
  <uri name="http://www.loc.gov/standards/xlink/xlink.xsd" uri="`+fileURI(xlink)+`"/>
  <system systemId="http://www.loc.gov/standards/xlink/xlink.xsd" uri="`+fileURI(xlink)+`"/>
</catalog>
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(lint, "--nonet", "--noout", "--schema", both, path)
	cmd.Env = append(os.Environ(), "XML_CATALOG_FILES="+catalog)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s does not validate against mets.xsd and premis.xsd: %v\n%s", path, err, out)
	}
	return nil
}
