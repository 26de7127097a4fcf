package faults

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
)

// config is what the environment says (make faults / make faults-smoke set
// the first ones):
//
//	LAZARET_FAULTS=1            run at all (otherwise TestFaults skips)
//	LAZARET_FAULTS_ITEMS        items per run (400)
//	LAZARET_FAULTS_KILLS        worker kills in scenario 1 (4 below 2000 items, else 20)
//	LAZARET_FAULTS_STRICT=1     fail when any count is non-zero (the smoke run)
//	LAZARET_FAULTS_LEDGERS      sqlite,postgres
//	LAZARET_FAULTS_SCENARIOS    e.g. 1,2b,5 (all)
//	LAZARET_FAULTS_PARALLEL     runs at once (8 below 2000 items, else 3)
//	LAZARET_FAULTS_SEED         item mix and fault choices (1)
//	LAZARET_FAULTS_SETTLE       longest wait for a quiet pipeline (150s; 420s from 2000 items)
//	LAZARET_FAULTS_CUT          ledger cut (10s)
//	LAZARET_FAULTS_RACES        most dead letters raced in scenario 5 (300)
//	LAZARET_FAULTS_BIN          use this lazaret binary instead of building one
//	LAZARET_FAULTS_REV          build this git revision (git archive) instead of the working tree
//	LAZARET_FAULTS_POSTGRES     admin DSN (else LAZARET_TEST_POSTGRES, else postgres://postgres@127.0.0.1:5432/postgres)
//	LAZARET_FAULTS_OUT          report file (artifacts/faults.md)
//	LAZARET_FAULTS_KEEP=1       keep every run's folder (logs, ledger, manifests)
type config struct {
	items, kills, parallel, maxRaces int
	strict, keep                     bool
	ledgers                          []string
	only                             map[string]bool
	seed                             uint64
	settle, cut                      time.Duration
	bin, rev, pgDSN, out             string
}

func loadConfig() (config, error) {
	var errs []error
	num := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a number", name, v))
		}
		return n
	}
	dur := func(name string, def time.Duration) time.Duration {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %v", name, v, err))
		}
		return d
	}
	c := config{items: num("LAZARET_FAULTS_ITEMS", 400)}
	big := c.items >= 2000
	c.kills = num("LAZARET_FAULTS_KILLS", map[bool]int{false: 4, true: 20}[big])
	c.parallel = max(1, num("LAZARET_FAULTS_PARALLEL", map[bool]int{false: 8, true: 3}[big]))
	c.maxRaces = num("LAZARET_FAULTS_RACES", 300)
	c.seed = uint64(num("LAZARET_FAULTS_SEED", 1))
	c.settle = dur("LAZARET_FAULTS_SETTLE", map[bool]time.Duration{false: 150 * time.Second, true: 420 * time.Second}[big])
	c.cut = dur("LAZARET_FAULTS_CUT", 10*time.Second)
	c.strict = os.Getenv("LAZARET_FAULTS_STRICT") == "1"
	c.keep = os.Getenv("LAZARET_FAULTS_KEEP") == "1"
	c.bin, c.rev = os.Getenv("LAZARET_FAULTS_BIN"), os.Getenv("LAZARET_FAULTS_REV")
	c.pgDSN = os.Getenv("LAZARET_FAULTS_POSTGRES")
	if c.pgDSN == "" {
		c.pgDSN = os.Getenv("LAZARET_TEST_POSTGRES")
	}
	if c.pgDSN == "" {
		c.pgDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	c.out = os.Getenv("LAZARET_FAULTS_OUT")
	ledgers := os.Getenv("LAZARET_FAULTS_LEDGERS")
	if ledgers == "" {
		ledgers = "sqlite,postgres"
	}
	for _, l := range strings.Split(ledgers, ",") {
		switch l = strings.TrimSpace(l); l {
		case "sqlite", "postgres":
			c.ledgers = append(c.ledgers, l)
		case "":
		default:
			errs = append(errs, fmt.Errorf("LAZARET_FAULTS_LEDGERS: unknown ledger %q (sqlite, postgres)", l))
		}
	}
	if s := os.Getenv("LAZARET_FAULTS_SCENARIOS"); s != "" {
		c.only = map[string]bool{}
		for _, id := range strings.Split(s, ",") {
			c.only[strings.TrimSpace(id)] = true
		}
	}
	if c.items < 20 {
		errs = append(errs, fmt.Errorf("LAZARET_FAULTS_ITEMS=%d: want at least 20", c.items))
	}
	return c, errors.Join(errs...)
}

// harness holds what every run shares: the binary, the fixture templates,
// the PostgreSQL admin connection settings.
type harness struct {
	t        *testing.T
	cfg      config
	root     string // repository
	work     string
	bin      string
	binFrom  string
	redisBin string
	tmpl     *templates
	pg       *pgx.ConnConfig
	pgErr    error
	logMu    sync.Mutex
	t0       time.Time
}

func (h *harness) logf(format string, args ...any) {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	fmt.Fprintf(os.Stderr, "faults %6.1fs "+format+"\n", append([]any{time.Since(h.t0).Seconds()}, args...)...)
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go" // the machine's Go; the PATH usually has it
}

// gitInfo says which code the binary was built from, without changing any
// git state (no index refresh).
func gitInfo(root string) string {
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"--no-optional-locks"}, args...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	head := run("rev-parse", "--short", "HEAD")
	if head == "" {
		return "unknown revision"
	}
	dirty := run("status", "--porcelain", "--untracked-files=no")
	if dirty != "" {
		return fmt.Sprintf("%s + uncommitted changes in %d file(s)", head, len(strings.Split(dirty, "\n")))
	}
	return head
}

// build makes the lazaret binary: the working tree, a git revision, or a
// given binary.
func (h *harness) build() error {
	out := filepath.Join(h.work, "lazaret")
	switch {
	case h.cfg.bin != "":
		h.bin, h.binFrom = h.cfg.bin, "prebuilt "+h.cfg.bin
		return nil
	case h.cfg.rev != "":
		src := filepath.Join(h.work, "src")
		if err := gitExport(h.root, h.cfg.rev, src); err != nil {
			return err
		}
		if err := goBuild(src, out); err != nil {
			return err
		}
		h.bin, h.binFrom = out, "git revision "+h.cfg.rev
		return nil
	}
	if err := goBuild(h.root, out); err != nil {
		return err
	}
	h.bin, h.binFrom = out, "working tree at "+gitInfo(h.root)
	return nil
}

func goBuild(dir, out string) error {
	cmd := exec.Command(goTool(), "build", "-o", out, "./cmd/lazaret")
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build ./cmd/lazaret in %s: %v\n%s", dir, err, b)
	}
	return nil
}

// gitExport writes the tree of rev into dst (git archive: reads the
// repository, changes nothing).
func gitExport(root, rev, dst string) error {
	cmd := exec.Command("git", "archive", "--format=tar", rev)
	cmd.Dir = root
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(pipe)
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dst, filepath.FromSlash(hd.Name))
		if !strings.HasPrefix(p, filepath.Clean(dst)+string(filepath.Separator)) {
			return fmt.Errorf("git archive: %s leaves the folder", hd.Name)
		}
		switch hd.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hd.Mode)&0o777)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	return cmd.Wait()
}

// result is one row of the table.
type result struct {
	sc      *scenario
	ledger  string
	counts  counts
	wall    time.Duration
	err     error
	verdict *verdict
	run     *run
	logs    map[string]int
	skipped string
}

func TestFaults(t *testing.T) {
	if os.Getenv("LAZARET_FAULTS") != "1" {
		t.Skip("the fault harness runs with LAZARET_FAULTS=1 (make faults-smoke, make faults)")
	}
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	if cfg.out == "" {
		cfg.out = filepath.Join(root, "artifacts", "faults.md")
	}
	h := &harness{t: t, cfg: cfg, root: root, work: t.TempDir(), t0: time.Now()}
	if cfg.keep {
		if h.work, err = os.MkdirTemp("", "lazaret-faults-"); err != nil {
			t.Fatal(err)
		}
		h.logf("keeping every run's folder under %s", h.work)
	}
	if h.redisBin, err = exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is needed (apt-get install redis-server): the harness runs its own on a free port")
	}
	h.logf("building lazaret")
	if err := h.build(); err != nil {
		h.writeReport(nil, err)
		t.Fatal(err)
	}
	h.logf("lazaret from %s", h.binFrom)
	if h.tmpl, err = loadTemplates(filepath.Join(h.work, "templates")); err != nil {
		t.Fatal(err)
	}
	if err := h.tmpl.loadInterchanges(root, h.bin, h.logf); err != nil {
		t.Fatal(err)
	}
	for _, l := range cfg.ledgers {
		if l == "postgres" {
			h.pg, h.pgErr = pgAdminConfig(cfg.pgDSN)
			if h.pgErr == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				var c *pgx.Conn
				if c, h.pgErr = connectAs(ctx, h.pg, ""); h.pgErr == nil {
					c.Close(ctx)
				}
				cancel()
			}
			if h.pgErr != nil {
				h.logf("PostgreSQL unavailable: %v", h.pgErr)
			}
		}
	}

	var plan []*result
	for _, sc := range scenarios(cfg) {
		if cfg.only != nil && !cfg.only[sc.id] || sc.optIn && cfg.only == nil {
			continue
		}
		for _, l := range cfg.ledgers {
			plan = append(plan, &result{sc: sc, ledger: l})
		}
	}
	if len(plan) == 0 {
		t.Fatal("no scenario selected (LAZARET_FAULTS_SCENARIOS)")
	}
	order := append([]*result{}, plan...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].sc.rank > order[j].sc.rank })
	h.logf("%d run(s), %d at a time, %d items each", len(plan), cfg.parallel, cfg.items)
	var wg sync.WaitGroup
	sem := make(chan struct{}, cfg.parallel)
	for i, res := range order {
		sem <- struct{}{} // in order: the longest runs start first
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			h.runOne(res, uint64(i))
		}()
	}
	wg.Wait()

	md := h.writeReport(plan, nil)
	fmt.Println(md)
	for _, res := range plan {
		if res.err != nil {
			t.Errorf("%s/%s: the harness could not run it: %v", res.sc.id, res.ledger, res.err)
		} else if cfg.strict && res.counts.bad() > 0 {
			c := res.counts
			t.Errorf("%s/%s: %d lost, %d unknown, %d duplicated terminal, %d duplicate parked, %d wrong place, %d revived; messages: %d lost, %d unknown, %d duplicated, %d wrong place",
				res.sc.id, res.ledger, c.Lost, c.Unknown, c.DupTerminal, c.DupParked, c.WrongPlace, c.Revived, c.MsgLost, c.MsgUnknown, c.MsgDup, c.MsgWrong)
		}
	}
}

// runOne runs one scenario against one ledger and fills res.
func (h *harness) runOne(res *result, n uint64) {
	name := res.sc.id + "/" + res.ledger
	start := time.Now()
	defer func() { res.wall = time.Since(start) }()
	if res.sc.replicated && res.ledger != "postgres" {
		res.skipped = "a PostgreSQL primary and replica: not for " + res.ledger
		return
	}
	if res.ledger == "postgres" && h.pgErr != nil {
		if os.Getenv("CI") == "true" {
			res.err = fmt.Errorf("PostgreSQL is required under CI=true: %w", h.pgErr)
		} else {
			res.skipped = "PostgreSQL unavailable: " + h.pgErr.Error()
		}
		return
	}
	dir := filepath.Join(h.work, "run-"+strings.ReplaceAll(name, "/", "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.err = err
		return
	}
	seed := h.cfg.seed*1000 + n
	r := &run{h: h, sc: res.sc, name: name, dir: dir, seed: seed, rng: rand.New(rand.NewPCG(seed, 7)), start: start, mark: -1,
		extra: map[string]int{}, extraSample: map[string][]string{}, unsubmitted: map[string]bool{},
		superStop: make(chan struct{}), superDone: make(chan struct{})}
	res.run = r
	var err error
	if r.cmdLog, err = os.Create(filepath.Join(dir, "commands.log")); err != nil {
		res.err = err
		return
	}
	defer r.cmdLog.Close()
	var redisURL, redisDesc string
	var redisOpt asynq.RedisConnOpt
	if res.sc.sentinel {
		set, err := startSentinelSet(h.redisBin, filepath.Join(dir, "redis"), res.sc.aof)
		if err != nil {
			res.err = err
			return
		}
		defer set.stop()
		r.sentinels = set
		redisURL, redisOpt, redisDesc = set.url(), set.connOpt(), set.String()
	} else {
		port, err := freePort()
		if err != nil {
			res.err = err
			return
		}
		redisDir := filepath.Join(dir, "redis")
		os.MkdirAll(redisDir, 0o755)
		r.redis = &redisServer{bin: h.redisBin, port: port, dir: redisDir, aof: res.sc.aof}
		if err := r.redis.start(); err != nil {
			res.err = err
			return
		}
		defer r.redis.crash()
		redisURL, redisDesc = r.redis.url(), r.redis.addr()
		redisOpt = asynq.RedisClientOpt{Addr: r.redis.addr(), DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second}
	}
	switch res.ledger {
	case "sqlite":
		r.led = &sqliteLedger{path: filepath.Join(dir, "ledger.db")}
	case "postgres":
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var err error
		if res.sc.replicated {
			r.led, err = newReplicatedLedger(ctx, dir, strings.ReplaceAll(res.sc.id, "/", "_"))
		} else {
			r.led, err = newPGLedger(ctx, h.pg, strings.ReplaceAll(res.sc.id, "/", "_"))
		}
		cancel()
		if err != nil {
			res.err = fmt.Errorf("PostgreSQL ledger: %w", err)
			return
		}
	}
	defer func() {
		if err := r.led.close(); err != nil {
			r.note("dropping the ledger: %v", err)
		}
	}()
	r.env = childEnv("LAZARET_REDIS_URL="+redisURL, "LAZARET_LEDGER="+r.led.dsn(), "LAZARET_LOG_LEVEL=error", "LAZARET_CONFIG=")
	r.insp = asynq.NewInspector(redisOpt)
	defer r.insp.Close()
	// Every process of the run dies with it, whatever happens.
	defer func() {
		r.mu.Lock()
		r.stopping = true
		ws := append([]*worker{}, r.workers...)
		r.mu.Unlock()
		for _, w := range ws {
			w.p.kill()
		}
	}()
	r.note("start: %s, %s ledger, redis %s (aof %v), %d items", res.sc.title, res.ledger, redisDesc, res.sc.aof, h.cfg.items)
	go r.supervise()
	if err := res.sc.body(r); err != nil {
		r.note("scenario error: %v", err)
		res.err = err
	}
	r.finish()
	v, err := r.evaluateNow()
	if err != nil {
		if res.err == nil {
			res.err = err
		}
		r.note("checks could not read: %v", err)
		return
	}
	if status, err := r.batchStatus(); err != nil {
		r.note("lazaret batch status: %v (read model not cross-checked)", err)
		r.addExtra("read model not cross-checked", err.Error())
	} else {
		v.crossCheck(r.b.id, status)
	}
	res.verdict, res.counts = v, v.counts
	if !res.sc.revival {
		res.counts.RevivedMeasured = false
	}
	res.logs = r.scanLogs()
	c := res.counts
	r.note("done: %d items, %d lost, %d unknown, %d dup terminal, %d dup parked, %d wrong place, %d revived; %d messages of %d interchanges: %d lost, %d unknown, %d dup, %d wrong place",
		c.Items, c.Lost, c.Unknown, c.DupTerminal, c.DupParked, c.WrongPlace, c.Revived, c.Messages, c.Interchanges, c.MsgLost, c.MsgUnknown, c.MsgDup, c.MsgWrong)
	h.writeRunDetails(res)
}

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// writeReport renders the table and the per-run summaries, prints nothing,
// writes cfg.out, and returns the Markdown.
func (h *harness) writeReport(plan []*result, fatal error) string {
	var b strings.Builder
	cfg := h.cfg
	fmt.Fprintf(&b, "# Lazaret fault harness\n\n")
	fmt.Fprintf(&b, "%s · lazaret from %s · %d items per run · %d worker kills in scenario 1 · ledger cut %s · %d run(s) at a time on %d CPU(s) · seed %d\n\n",
		time.Now().UTC().Format(time.RFC3339), h.binFrom, cfg.items, cfg.kills, cfg.cut, cfg.parallel, runtime.NumCPU(), cfg.seed)
	if fatal != nil {
		fmt.Fprintf(&b, "**The harness could not start:**\n\n```\n%v\n```\n", fatal)
		h.save(b.String())
		return b.String()
	}
	b.WriteString("Columns count items (each at most once per column). **lost**: no terminal outcome in the ledger and no live task in the broker. " +
		"**unknown**: not settled, but the broker still holds a live task (the harness cannot know). **dup terminal**: several terminal events at one attempt, " +
		"two `ing`, a terminal event after a terminal one with no replay between, or one failure both replayed and discarded. " +
		"**dup parked**: more than one task in quarantine + audit-hold. **wrong place**: the broker's copies disagree with the ledger's latest " +
		"destination (including a missing copy), or a broker task belongs to no submitted item; in brackets after **lost**: items without a terminal outcome " +
		"until `lazaret reconcile-broker` ran. **revived**: ledger events after the resubmission " +
		"(scenario 6 only; items or messages). Items are TIFF masters and UN/EDIFACT interchanges (how many of them interchanges: in brackets); " +
		"the interchange columns judge them as items. **messages**: the messages of those interchanges. **msg lost**: a message of an interchange " +
		"whose envelope was accepted that is neither a member of an accepted chunk nor settled by events of its own, and no live task holds it " +
		"or its interchange (in brackets: unsettled while a task still holds it). **msg dup**: a message accepted in more than one chunk, " +
		"in a chunk and by events of its own, or whose own events break the per-item rules above. **msg wrong**: a message accepted although " +
		"its interchange ended elsewhere (envelope rejected), a chunk's ing and val that disagree on it, or its own events and the broker's " +
		"copies disagree. Wall times overlap: runs execute in parallel.\n\n")
	b.WriteString("| scenario | ledger | items | lost | unknown | dup terminal | dup parked | wrong place | revived | messages | msg lost | msg dup | msg wrong | wall |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, res := range plan {
		title := res.sc.id + " " + res.sc.title
		if res.skipped != "" {
			fmt.Fprintf(&b, "| %s | %s | skipped: %s | | | | | | | | | | | |\n", title, res.ledger, res.skipped)
			continue
		}
		if res.err != nil && res.verdict == nil {
			fmt.Fprintf(&b, "| %s | %s | – | – | – | – | – | – | – | – | – | – | – | %s |\n", title, res.ledger, res.wall.Round(time.Second))
			continue
		}
		c := res.counts
		rev := "–"
		if c.RevivedMeasured {
			rev = strconv.Itoa(c.Revived)
		}
		lost := bold(c.Lost)
		if res.run != nil && res.run.preLost > 0 {
			lost += fmt.Sprintf(" (%d before reconcile-broker)", res.run.preLost)
		}
		msgLost := bold(c.MsgLost)
		if c.MsgUnknown > 0 {
			msgLost += fmt.Sprintf(" (**%d** unsettled)", c.MsgUnknown)
		}
		fmt.Fprintf(&b, "| %s | %s | %d (%d) | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s | %s |\n", title, res.ledger, c.Items, c.Interchanges, lost, bold(c.Unknown),
			bold(c.DupTerminal), bold(c.DupParked), bold(c.WrongPlace), rev, c.Messages, msgLost, bold(c.MsgDup), bold(c.MsgWrong), res.wall.Round(time.Second))
	}
	b.WriteString("\n## Findings per run\n\n")
	for _, res := range plan {
		if res.skipped != "" {
			continue
		}
		fmt.Fprintf(&b, "### %s %s — %s\n\n", res.sc.id, res.sc.title, res.ledger)
		if res.err != nil {
			fmt.Fprintf(&b, "- harness error: `%v`\n", res.err)
		}
		if res.verdict != nil {
			v := res.verdict
			var outs []string
			for _, k := range sortedKeys(v.outcomes) {
				outs = append(outs, fmt.Sprintf("%s %d", k, v.outcomes[k]))
			}
			fmt.Fprintf(&b, "- outcomes (latest destination): %s\n", strings.Join(outs, ", "))
			var mouts []string
			for _, k := range sortedKeys(v.msgOutcomes) {
				mouts = append(mouts, fmt.Sprintf("%s %d", k, v.msgOutcomes[k]))
			}
			if len(mouts) > 0 {
				fmt.Fprintf(&b, "- messages of %d interchange(s) (where each is): %s\n", v.Interchanges, strings.Join(mouts, ", "))
			}
			for _, k := range sortedKeys(v.findings) {
				fmt.Fprintf(&b, "- %s: **%d**\n", k, v.findings[k])
				for i, s := range v.samples[k] {
					if i == 2 {
						break
					}
					fmt.Fprintf(&b, "  - `%s`\n", tail(s, 400))
				}
			}
			if v.foreign > 0 {
				fmt.Fprintf(&b, "- ledger objects that are no submitted item: %d\n", v.foreign)
			}
		}
		if r := res.run; r != nil {
			for _, k := range sortedKeys(r.extra) {
				fmt.Fprintf(&b, "- %s: %d\n", k, r.extra[k])
				for i, s := range r.extraSample[k] {
					if i == 2 {
						break
					}
					fmt.Fprintf(&b, "  - `%s`\n", tail(s, 300))
				}
			}
			for _, line := range r.timeline {
				if strings.Contains(line, "races done") || strings.Contains(line, "operator actions") || strings.Contains(line, "before reconcile-broker") ||
					strings.Contains(line, "reconcile-broker:") || strings.Contains(line, "NOT settled") || strings.Contains(line, "kick:") || strings.Contains(line, "resubmitted") {
					fmt.Fprintf(&b, "- %s\n", strings.TrimSpace(line))
				}
			}
		}
		if len(res.logs) > 0 {
			var ls []string
			for _, k := range sortedKeys(res.logs) {
				ls = append(ls, fmt.Sprintf("%q ×%d", k, res.logs[k]))
			}
			fmt.Fprintf(&b, "- worker error-level log lines: %s\n", strings.Join(ls, ", "))
		}
		fmt.Fprintf(&b, "- details: `%s`\n\n", h.detailsPath(res))
	}
	h.save(b.String())
	return b.String()
}

func bold(n int) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("**%d**", n)
}

func (h *harness) save(md string) {
	if err := os.MkdirAll(filepath.Dir(h.cfg.out), 0o755); err != nil {
		h.logf("report: %v", err)
		return
	}
	if err := os.WriteFile(h.cfg.out, []byte(md), 0o644); err != nil {
		h.logf("report: %v", err)
		return
	}
	h.logf("report written to %s", h.cfg.out)
}

// writeRunDetails writes one run's timeline, every finding with its
// samples, and the commands it ran to artifacts/faults/.
func (h *harness) writeRunDetails(res *result) {
	dir := filepath.Join(filepath.Dir(h.cfg.out), "faults")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	r := res.run
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s — %s ledger, %d items, lazaret from %s\n\n", res.sc.id, res.sc.title, res.ledger, res.counts.Items, h.binFrom)
	b.WriteString("timeline:\n")
	for _, l := range r.timeline {
		b.WriteString("  " + l + "\n")
	}
	if v := res.verdict; v != nil {
		b.WriteString("\noutcomes:\n")
		for _, k := range sortedKeys(v.outcomes) {
			fmt.Fprintf(&b, "  %-14s %d\n", k, v.outcomes[k])
		}
		fmt.Fprintf(&b, "\nmessages of %d interchange(s):\n", v.Interchanges)
		for _, k := range sortedKeys(v.msgOutcomes) {
			fmt.Fprintf(&b, "  %-14s %d\n", k, v.msgOutcomes[k])
		}
		b.WriteString("\nfindings:\n")
		for _, k := range sortedKeys(v.findings) {
			fmt.Fprintf(&b, "  %s: %d\n", k, v.findings[k])
			for _, s := range v.samples[k] {
				fmt.Fprintf(&b, "    %s\n", s)
			}
		}
	}
	for _, k := range sortedKeys(r.extra) {
		fmt.Fprintf(&b, "  %s: %d\n", k, r.extra[k])
		for _, s := range r.extraSample[k] {
			fmt.Fprintf(&b, "    %s\n", s)
		}
	}
	for _, k := range sortedKeys(res.logs) {
		fmt.Fprintf(&b, "  worker log (error): %q ×%d\n", k, res.logs[k])
	}
	if cl, err := os.ReadFile(filepath.Join(r.dir, "commands.log")); err == nil {
		b.WriteString("\ncommands:\n")
		b.WriteString(tail(string(cl), 200000))
	}
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s.txt", res.sc.id, res.ledger)), []byte(b.String()), 0o644)
}

// detailsPath is where writeRunDetails puts a run's details, relative to
// the repository when it is inside it.
func (h *harness) detailsPath(res *result) string {
	p := filepath.Join(filepath.Dir(h.cfg.out), "faults", fmt.Sprintf("%s-%s.txt", res.sc.id, res.ledger))
	if rel, err := filepath.Rel(h.root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}
