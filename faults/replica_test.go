package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// A PostgreSQL primary and its streaming replica, both the run's own
// (initdb in the run's folder, loopback ports of their own), for scenario
// 10: the replica stops receiving WAL mid-batch (asynchronous replication
// that lags), the primary dies, and the replica is promoted with the
// outcomes the primary recorded after the lag missing. The workers reach
// the ledger through a multi-host URL with target_session_attrs=read-write,
// as docs/ha.md says to deploy them, and follow the promotion by
// themselves.

// pgCluster is one PostgreSQL server of the run.
type pgCluster struct {
	bin, dir string
	port     int
	cred     *syscall.Credential // the postgres OS user, when the harness runs as root
}

// pgBin is the newest installed PostgreSQL's bin folder.
func pgBin() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb") // Debian's, never on PATH
	if len(found) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
		return "", errors.New("no initdb (PostgreSQL's server binaries) found")
	}
	sort.Slice(found, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(found[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(found[j]))))
		return vi < vj
	})
	return filepath.Dir(found[len(found)-1]), nil
}

// postgresUser is who the servers run as: initdb and postgres refuse root.
func postgresUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("the harness runs as root and there is no postgres user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (c *pgCluster) cmd(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, lastLines(string(out), 3))
	}
	return nil
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(ls[max(0, len(ls)-n):], " | ")
}

// own makes path the postgres user's.
func (c *pgCluster) own(path string) error {
	if c.cred == nil {
		return nil
	}
	return filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(c.cred.Uid), int(c.cred.Gid))
	})
}

func (c *pgCluster) data() string { return filepath.Join(c.dir, "data") }

func (c *pgCluster) start(ctx context.Context) error {
	return c.cmd(ctx, "pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", "start")
}

// config appends what every server of the run needs: its port and socket
// folder, loopback only, and no fsync (the run's folder is scratch).
func (c *pgCluster) config() error {
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nfsync = off\nmax_connections = 200\nwal_level = replica\nmax_wal_senders = 4\n",
		c.port, c.dir)
	return err
}

func (c *pgCluster) adminConfig() (*pgx.ConnConfig, error) {
	return pgAdminConfig(fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port))
}

func (c *pgCluster) stop(mode string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.cmd(ctx, "pg_ctl", "-D", c.data(), "-m", mode, "-w", "stop")
}

// replicatedLedger is the run's ledger on a primary with a streaming
// replica; its admin follows the promotion.
type replicatedLedger struct {
	*pgLedger
	primary, replica *pgCluster
	promoted         bool
}

func newReplicatedLedger(ctx context.Context, dir, suffix string) (*replicatedLedger, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	cred, err := postgresUser()
	if err != nil {
		return nil, err
	}
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	if cred != nil {
		// The postgres user must reach the run's folder: the harness's
		// own temporary folders (the test's, the harness's) are 0700: let
		// it through each up to the system's temporary folder.
		for d := dir; d != filepath.Dir(d) && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil {
				os.Chmod(d, fi.Mode().Perm()|0o011)
			}
		}
	}
	p := &pgCluster{bin: bin, dir: filepath.Join(dir, "pg-primary"), port: ports[0], cred: cred}
	r := &pgCluster{bin: bin, dir: filepath.Join(dir, "pg-replica"), port: ports[1], cred: cred}
	for _, c := range []*pgCluster{p, r} {
		if err := os.MkdirAll(c.dir, 0o700); err != nil {
			return nil, err
		}
		if err := c.own(c.dir); err != nil {
			return nil, err
		}
	}
	rl := &replicatedLedger{primary: p, replica: r}
	if err := p.cmd(ctx, "initdb", "-D", p.data(), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		return nil, err
	}
	if err := p.config(); err != nil {
		return nil, err
	}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	if err := r.cmd(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-U", "postgres", "-D", r.data(), "-R", "-X", "stream"); err != nil {
		p.stop("immediate")
		return nil, err
	}
	if err := r.config(); err != nil {
		p.stop("immediate")
		return nil, err
	}
	if err := r.start(ctx); err != nil {
		p.stop("immediate")
		return nil, err
	}
	admin, err := p.adminConfig()
	if err != nil {
		rl.stopAll()
		return nil, err
	}
	if err := waitStreaming(ctx, admin); err != nil {
		rl.stopAll()
		return nil, err
	}
	pl, err := newPGLedger(ctx, admin, suffix)
	if err != nil {
		rl.stopAll()
		return nil, err
	}
	rl.pgLedger = pl
	return rl, nil
}

// waitStreaming waits until the primary streams to its replica.
func waitStreaming(ctx context.Context, admin *pgx.ConnConfig) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := connectAs(ctx, admin, "")
		if err == nil {
			var n int
			err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'`).Scan(&n)
			conn.Close(ctx)
			if err == nil && n == 1 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replica does not stream from the primary: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// dsn names both servers: a worker takes whichever accepts writes.
func (l *replicatedLedger) dsn() string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=5",
		l.name, l.password, l.primary.port, l.replica.port, l.name)
}

// lag cuts the replica off the primary's WAL: what asynchronous
// replication that fell behind leaves the replica without. It says how far
// the replica had replayed.
func (l *replicatedLedger) lag(ctx context.Context) (string, error) {
	admin, err := l.replica.adminConfig()
	if err != nil {
		return "", err
	}
	conn, err := connectAs(ctx, admin, "")
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ALTER SYSTEM SET primary_conninfo = ''`); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		return "", err
	}
	var lsn string
	conn.QueryRow(ctx, `SELECT coalesce(pg_last_wal_replay_lsn()::text, '?')`).Scan(&lsn)
	return "the replica no longer receives WAL (primary_conninfo emptied); replayed to " + lsn, nil
}

// promote stops the primary at once (a crash) and promotes the replica;
// from then on the harness reads the ledger there.
func (l *replicatedLedger) promote(ctx context.Context) (string, error) {
	var behind int64
	if conn, err := connectAs(ctx, l.admin, l.name); err == nil {
		conn.QueryRow(ctx, `SELECT count(*) FROM lazaret_events`).Scan(&behind)
		conn.Close(ctx)
	}
	if err := l.primary.stop("immediate"); err != nil {
		return "", err
	}
	if err := l.replica.cmd(ctx, "pg_ctl", "-D", l.replica.data(), "-w", "promote"); err != nil {
		return "", err
	}
	admin, err := l.replica.adminConfig()
	if err != nil {
		return "", err
	}
	l.admin, l.promoted = admin, true
	var have int64
	if conn, err := connectAs(ctx, admin, l.name); err == nil {
		conn.QueryRow(ctx, `SELECT count(*) FROM lazaret_events`).Scan(&have)
		conn.Close(ctx)
	}
	return fmt.Sprintf("primary stopped (immediate), replica promoted: it holds %d events of the primary's %d", have, behind), nil
}

func (l *replicatedLedger) stopAll() {
	if !l.promoted {
		l.primary.stop("immediate")
	}
	l.replica.stop("immediate")
}

func (l *replicatedLedger) close() error {
	err := l.pgLedger.close()
	l.stopAll()
	os.RemoveAll(l.primary.dir)
	os.RemoveAll(l.replica.dir)
	return err
}

// replicaPromoted is scenario 10: the workers run on the primary; at 30 %
// of the window the replica stops receiving WAL; once the batch settles the
// primary is stopped at once and the replica promoted, with the outcomes
// recorded since the lag missing (the broker acted on them). The workers,
// left running, follow the promotion by their multi-host URL; `lazaret
// ledger recover` runs; the harness's end (reconcile-broker, the checks)
// follows.
func replicaPromoted(r *run) error {
	rl, ok := r.led.(*replicatedLedger)
	if !ok {
		return errors.New("scenario 10 needs its own primary and replica")
	}
	if err := startWorkers(r, 3); err != nil {
		return err
	}
	window := faultWindow(r.h.cfg.items)
	lag := fault{at: window * 3 / 10, fire: func() {
		q, _ := r.ingestInfo()
		how, err := rl.lag(context.Background())
		if err != nil {
			r.addExtra("replication lag did not work as planned", err.Error())
			return
		}
		r.note("FAULT %s (ingest before: %s)", how, q)
	}}
	if err := r.drive(window, []fault{lag}); err != nil {
		return err
	}
	r.restoreWG.Wait()
	r.settle("before the failover", r.h.cfg.settle)
	r.fault()
	how, err := rl.promote(context.Background())
	r.fault()
	if err != nil {
		return fmt.Errorf("promote the replica: %w", err)
	}
	r.note("FAULT %s", how)
	res := r.lazaret(5*time.Minute, "ledger", "recover")
	r.note("ledger recover: %s", lastLine(res.stdout))
	if res.code != 0 {
		r.addExtra("ledger recover failed", res.String()+": "+lastLine(res.stderr))
	}
	return nil
}
