package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/lazaret/lazaret/premis/ledgersql"
)

// proc is one child process: a worker, a redis-server, a lock holder. Every
// proc is killed by its id when the run ends (and by the kernel if the
// harness dies first: Pdeathsig).
type proc struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	started time.Time
}

func startProc(name, logPath string, env []string, bin string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), started: time.Now()}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to this process (by its id) and waits for it.
func (p *proc) kill() {
	if p.alive() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// stop asks the process to stop (SIGTERM) and kills it after timeout.
func (p *proc) stop(timeout time.Duration) (graceful bool) {
	if !p.alive() {
		return true
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		p.kill()
		return false
	}
}

// cmdResult is what a short-lived lazaret command did.
type cmdResult struct {
	args           []string
	stdout, stderr string
	code           int // -1: did not run or timed out
	dur            time.Duration
}

func (c cmdResult) String() string {
	return fmt.Sprintf("lazaret %s -> exit %d (%s)", strings.Join(c.args, " "), c.code, c.dur.Round(time.Millisecond))
}

// runShort runs a command to completion with a timeout.
func runShort(ctx context.Context, timeout time.Duration, env []string, bin string, args ...string) cmdResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	err := cmd.Run()
	r := cmdResult{args: args, stdout: out.String(), stderr: errb.String(), dur: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		r.code = -1
		r.stderr += "\n(harness: timed out after " + timeout.String() + ")"
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		r.code = -1
		r.stderr += "\n(harness: " + err.Error() + ")"
	}
	return r
}

// childEnv is the harness's environment without anything that could point a
// child at another Redis, ledger or config, plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LAZARET_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

var (
	portMu    sync.Mutex
	portsUsed = map[int]bool{}
)

// freePort returns a loopback TCP port nobody listens on, never 6379, never
// one handed out before in this process.
func freePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port == 6379 || portsUsed[port] {
			continue
		}
		portsUsed[port] = true
		return port, nil
	}
	return 0, errors.New("no free loopback port")
}

// redisServer is the harness's own redis-server on a loopback port.
type redisServer struct {
	bin  string
	port int
	dir  string
	aof  bool
	// replicaOf is "host:port" of the primary this server starts as a
	// replica of (the Sentinel scenario), or "".
	replicaOf string
	p         *proc
	n         int // starts
}

func (r *redisServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }
func (r *redisServer) url() string  { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

func (r *redisServer) start() error {
	if r.p != nil && r.p.alive() {
		return errors.New("redis already running")
	}
	aof := "no"
	if r.aof {
		aof = "yes"
	}
	r.n++
	args := []string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--protected-mode", "yes", "--dir", r.dir,
		"--save", "", "--appendonly", aof, "--appendfsync", "everysec", "--daemonize", "no", "--logfile", "",
		"--dbfilename", "dump.rdb", "--maxclients", "2000"}
	// A replica's full sync starts at once (the default waits 5 s for
	// more replicas to share the transfer).
	args = append(args, "--repl-diskless-sync-delay", "0")
	if r.replicaOf != "" {
		host, port, err := net.SplitHostPort(r.replicaOf)
		if err != nil {
			return fmt.Errorf("replica of %q: %w", r.replicaOf, err)
		}
		args = append(args, "--replicaof", host, port)
	}
	p, err := startProc("redis", filepath.Join(r.dir, "redis.log"), childEnv(), r.bin, args...)
	if err != nil {
		return err
	}
	r.p = p
	c := redis.NewClient(&redis.Options{Addr: r.addr(), DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if !p.alive() || time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			p.kill()
			return fmt.Errorf("redis-server on %s did not answer: %v\n%s", r.addr(), err, tail(string(log), 1500))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// crash kills redis-server with SIGKILL; restart starts it again on the same
// port and folder (with AOF it reloads what it had).
func (r *redisServer) crash() {
	if r.p != nil {
		r.p.kill()
	}
}

// shutdown stops redis-server with SIGTERM (with AOF: a clean shutdown that
// flushes the file).
func (r *redisServer) shutdown() bool {
	if r.p == nil {
		return true
	}
	return r.p.stop(20 * time.Second)
}

// ledgerBackend is one ledger the workers write: an SQLite file or a
// PostgreSQL database the harness created.
type ledgerBackend interface {
	kind() string
	dsn() string // what LAZARET_LEDGER is set to
	events(ctx context.Context) ([]ev, error)
	// cut makes the ledger refuse writes for d.
	cut(ctx context.Context, d time.Duration) (string, error)
	// midway waits until an interchange has more than after chunks of
	// accepted messages recorded (ing events with members), or an event with
	// a routing destination (then done: its routing ended or failed), or ctx
	// ends.
	midway(ctx context.Context, batch, object string, after int) (chunks int, done bool, err error)
	// snapshot takes a consistent copy of the ledger while the workers
	// run (a backup); restore, with every worker stopped, puts it back in
	// place of the ledger (scenario 9).
	snapshot(ctx context.Context) (string, error)
	restore(ctx context.Context) (string, error)
	close() error
}

// sqliteLedger is the ledger file in the run's folder.
type sqliteLedger struct{ path string }

func (s *sqliteLedger) kind() string { return "sqlite" }
func (s *sqliteLedger) dsn() string  { return s.path }
func (s *sqliteLedger) close() error { return nil }

const eventColumns = `seq, id, type, destination, object_id, batch_id, correlation_id, attempt, task_id, replay_of, operator, code, class, members`

// idText is an identifier column's value as text: a packed SQLite
// ledger's bytes unpacked, another ledger's text as it is.
func idText(v any) (string, error) {
	switch v := v.(type) {
	case []byte:
		return ledgersql.Unpack(v)
	case string:
		return v, nil
	}
	return "", fmt.Errorf("a %T", v)
}

func scanEvents(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}) ([]ev, error) {
	var out []ev
	for rows.Next() {
		var e ev
		var members string
		var id, corr any // a packed SQLite ledger's are bytes (ledgersql.Pack)
		if err := rows.Scan(&e.Seq, &id, &e.Type, &e.Dest, &e.Object, &e.Batch, &corr, &e.Attempt, &e.TaskID, &e.ReplayOf, &e.Operator, &e.Code, &e.Class, &members); err != nil {
			return nil, err
		}
		var err error
		if e.ID, err = idText(id); err != nil {
			return nil, fmt.Errorf("event #%d: id: %w", e.Seq, err)
		}
		if e.Corr, err = idText(corr); err != nil {
			return nil, fmt.Errorf("event #%d: correlation_id: %w", e.Seq, err)
		}
		if e.Members, err = decodeMembers(members); err != nil {
			return nil, fmt.Errorf("event #%d: %w", e.Seq, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func (s *sqliteLedger) events(ctx context.Context) ([]ev, error) {
	if _, err := os.Stat(s.path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+s.path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT `+eventColumns+` FROM events ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanEvents(rows)
}

// midwayQuery counts an object's chunk ing events and its events with a
// routing destination (its submission's does not count).
const midwayQuery = `SELECT COALESCE(SUM(CASE WHEN type = 'ing' AND members <> '' THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(CASE WHEN destination IN ('accept', 'retry', 'dead-letter', 'quarantine', 'audit-hold') THEN 1 ELSE 0 END), 0)
	FROM %s WHERE batch_id = %s AND object_id = %s`

// pollMidway runs one midway query every 5 ms until it has an answer.
func pollMidway(ctx context.Context, after int, query func() (int, int, error)) (int, bool, error) {
	var lastErr error
	for {
		chunks, dests, err := query()
		if err == nil && (chunks > after || dests > 0) {
			return chunks, dests > 0, nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return 0, false, errors.Join(ctx.Err(), lastErr)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *sqliteLedger) midway(ctx context.Context, batch, object string, after int) (int, bool, error) {
	var db *sql.DB
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	q := fmt.Sprintf(midwayQuery, "events", "?", "?")
	return pollMidway(ctx, after, func() (int, int, error) {
		if db == nil {
			if _, err := os.Stat(s.path); err != nil {
				return 0, 0, err
			}
			var err error
			if db, err = sql.Open("sqlite", "file:"+s.path+"?mode=ro&_pragma=busy_timeout(100)"); err != nil {
				db = nil
				return 0, 0, err
			}
		}
		var c, d int
		err := db.QueryRowContext(ctx, q, batch, object).Scan(&c, &d)
		return c, d, err
	})
}

// cut holds an exclusive write lock on the ledger from the harness's own
// connection (another process than every worker) for d: root ignores file
// modes, a lock it cannot ignore.
func (s *sqliteLedger) cut(ctx context.Context, d time.Duration) (string, error) {
	db, err := sql.Open("sqlite", "file:"+s.path+"?_pragma=busy_timeout(30000)")
	if err != nil {
		return "", err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	t0 := time.Now()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		return "", fmt.Errorf("BEGIN EXCLUSIVE: %w", err)
	}
	waited := time.Since(t0)
	held := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	_, err = conn.ExecContext(context.Background(), "ROLLBACK")
	return fmt.Sprintf("BEGIN EXCLUSIVE held %s (took %s to get)", time.Since(held).Round(time.Millisecond), waited.Round(time.Millisecond)), err
}

// snapshot copies the ledger with VACUUM INTO from the harness's own
// connection: a consistent copy while the workers write.
func (s *sqliteLedger) snapshot(ctx context.Context) (string, error) {
	db, err := sql.Open("sqlite", "file:"+s.path+"?_pragma=busy_timeout(30000)")
	if err != nil {
		return "", err
	}
	defer db.Close()
	os.Remove(s.path + ".snapshot")
	t0 := time.Now()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", s.path+".snapshot"); err != nil {
		return "", fmt.Errorf("VACUUM INTO: %w", err)
	}
	return fmt.Sprintf("VACUUM INTO %s in %s", filepath.Base(s.path)+".snapshot", time.Since(t0).Round(time.Millisecond)), nil
}

// restore replaces the ledger file (and its WAL) by the snapshot.
func (s *sqliteLedger) restore(context.Context) (string, error) {
	for _, suffix := range []string{"-wal", "-shm", ""} {
		if err := os.Remove(s.path + suffix); err != nil && !os.IsNotExist(err) {
			return "", err
		}
	}
	if err := os.Rename(s.path+".snapshot", s.path); err != nil {
		return "", err
	}
	return "ledger file replaced by the snapshot", nil
}

// pgLedger is a database and a login role the harness created for one run
// and drops at the end. Workers connect as the role (not a superuser, so
// CONNECTION LIMIT 0 applies to them); the harness administers as the admin
// DSN's user and touches nothing else.
type pgLedger struct {
	admin    *pgx.ConnConfig
	name     string // database and role
	password string
	created  bool
}

func pgAdminConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	h := cfg.Host
	if !(strings.HasPrefix(h, "/") || h == "localhost" || net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback()) {
		return nil, fmt.Errorf("PostgreSQL host %q is not a loopback address or a local socket: refused", h)
	}
	cfg.ConnectTimeout = 5 * time.Second
	return cfg, nil
}

func connectAs(ctx context.Context, base *pgx.ConnConfig, db string) (*pgx.Conn, error) {
	c := base.Copy()
	if db != "" {
		c.Database = db
	}
	return pgx.ConnectConfig(ctx, c)
}

func newPGLedger(ctx context.Context, admin *pgx.ConnConfig, suffix string) (*pgLedger, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	l := &pgLedger{admin: admin, name: sanitizeIdent(fmt.Sprintf("lazaret_faults_%d_%s", os.Getpid(), suffix)), password: hex.EncodeToString(b)}
	conn, err := connectAs(ctx, admin, "")
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '%s'`, l.name, l.password)); err != nil {
		return nil, fmt.Errorf("create role: %w", err)
	}
	l.created = true
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, l.name, l.name)); err != nil {
		l.close()
		return nil, fmt.Errorf("create database: %w", err)
	}
	return l, nil
}

func sanitizeIdent(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := b.String()
	if len(out) > 60 {
		out = out[:60]
	}
	return out
}

func (l *pgLedger) kind() string { return "postgres" }

func (l *pgLedger) dsn() string {
	host := l.admin.Host
	if strings.HasPrefix(host, "/") {
		return fmt.Sprintf("postgres://%s:%s@/%s?host=%s&port=%d&sslmode=disable", l.name, l.password, l.name, host, l.admin.Port)
	}
	return fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", l.name, l.password, net.JoinHostPort(host, strconv.Itoa(int(l.admin.Port))), l.name)
}

func (l *pgLedger) events(ctx context.Context) ([]ev, error) {
	conn, err := connectAs(ctx, l.admin, l.name)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT seq, id::text, type, destination, object_id, batch_id, correlation_id, attempt, task_id, replay_of, operator, code, class, members FROM lazaret_events ORDER BY seq`)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" { // no table yet: nothing written
			return nil, nil
		}
		return nil, err
	}
	defer rows.Close()
	return scanEvents(rows)
}

func (l *pgLedger) midway(ctx context.Context, batch, object string, after int) (int, bool, error) {
	conn, err := connectAs(ctx, l.admin, l.name)
	if err != nil {
		return 0, false, err
	}
	defer conn.Close(context.Background())
	q := fmt.Sprintf(midwayQuery, "lazaret_events", "$1", "$2")
	return pollMidway(ctx, after, func() (int, int, error) {
		var c, d int
		err := conn.QueryRow(ctx, q, batch, object).Scan(&c, &d)
		return c, d, err
	})
}

// cut refuses new connections to the run's database (CONNECTION LIMIT 0
// binds the workers' non-superuser role) and terminates its sessions, for d,
// then lets connections in again.
func (l *pgLedger) cut(ctx context.Context, d time.Duration) (string, error) {
	conn, err := connectAs(ctx, l.admin, "")
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s CONNECTION LIMIT 0`, l.name)); err != nil {
		return "", err
	}
	terminated := 0
	term := func() {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1 AND usename = $1 AND pid <> pg_backend_pid()`, l.name).Scan(&n); err == nil {
			terminated += n
		}
	}
	end := time.Now().Add(d)
	for time.Now().Before(end) && ctx.Err() == nil {
		term()
		time.Sleep(500 * time.Millisecond)
	}
	_, err = conn.Exec(context.Background(), fmt.Sprintf(`ALTER DATABASE %s CONNECTION LIMIT -1`, l.name))
	return fmt.Sprintf("CONNECTION LIMIT 0 for %s, %d session(s) terminated", d, terminated), err
}

// snapName is the database a snapshot is kept in.
func (l *pgLedger) snapName() string { return l.name[:min(len(l.name), 57)] + "_snap" }

// snapshot copies the run's database (CREATE DATABASE … TEMPLATE), which
// needs it without sessions for a moment: new connections are refused
// and the role's sessions terminated, as in cut, until the copy is taken.
func (l *pgLedger) snapshot(ctx context.Context) (string, error) {
	conn, err := connectAs(ctx, l.admin, "")
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s CONNECTION LIMIT 0`, l.name)); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), fmt.Sprintf(`ALTER DATABASE %s CONNECTION LIMIT -1`, l.name))
	t0 := time.Now()
	var last error
	for try := 0; try < 50; try++ {
		conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, l.name)
		if _, last = conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s OWNER %s TEMPLATE %s`, l.snapName(), l.name, l.name)); last == nil {
			return fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s in %s", l.snapName(), l.name, time.Since(t0).Round(time.Millisecond)), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", fmt.Errorf("copy the database: %w", last)
}

// restore drops the run's database and renames the snapshot in its place.
func (l *pgLedger) restore(ctx context.Context) (string, error) {
	conn, err := connectAs(ctx, l.admin, "")
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE %s WITH (FORCE)`, l.name)); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, l.snapName(), l.name)); err != nil {
		return "", err
	}
	return fmt.Sprintf("database %s dropped, %s renamed in its place", l.name, l.snapName()), nil
}

func (l *pgLedger) close() error {
	if !l.created {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := connectAs(ctx, l.admin, "")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var errs []error
	for _, db := range []string{l.name, l.snapName()} {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, db)); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP ROLE IF EXISTS %s`, l.name)); err != nil {
		errs = append(errs, err)
	}
	l.created = false
	return errors.Join(errs...)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
