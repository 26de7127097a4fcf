package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/edifact/directory"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// What the workers and operators of a configuration apply: the policies, the rules and registries, the replies.

func (c *Config) policy() ingest.Policy {
	return ingest.Policy{MaxRetry: c.MaxRetry, RetryBase: c.RetryBase, RetryMax: c.RetryMax, PoisonCap: c.PoisonCap,
		RoutingBudget: c.RoutingTries, RoutingBase: c.RoutingBase, RoutingMax: c.RoutingMax}
}

func (c *Config) master() validate.MasterPolicy {
	m := validate.DefaultMasterPolicy()
	m.PixelBudget, m.MemoryBudget, m.PrivateTags, m.Undecodable = c.PixelBudget, c.MemoryBudget, c.PrivateTags, c.Undecodable
	m.Rules.MinDPI, m.Rules.RequireICC = c.MinDPI, c.RequireICC
	m.DecodeUncompressed = c.DecodeAll
	m.RefuseSampleFormats = c.RefuseSamples
	return m
}

// readManifest reads the manifest at path as a worker would read an item:
// beneath an ingest root when any is configured (refused outside them),
// else confined to its own folder; never through a link. Its items may be
// hard-linked where --allow-hardlinks says.
func (c *Config) readManifest(path string) (*validate.Manifest, string, error) {
	var src validate.Source
	if len(c.IngestRoots) > 0 {
		s, err := validate.Within(c.IngestRoots, path)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", validate.ErrManifestUnreadable, err)
		}
		src = s
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, "", err
		}
		src = validate.SourceOf(abs)
	}
	src.Hardlinks = validate.HardlinkRoots(c.Hardlinks).Allow(src.Root)
	return validate.ReadManifest(src)
}

// logger is the process's one JSON log, on w. go-redis's own lines (its
// pool's dial errors, otherwise plain text on standard error) go through
// it too, throttled: every line the process writes is JSON.
func (c *Config) logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.LogLevel))
	l := slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl}))
	redis.SetLogger(ingest.NewRedisLogger(l))
	return l
}

var software = premis.Software{Name: "lazaret", Version: version}

func (c *Config) worker(l premis.Ledger, b ingest.Enqueuer, log *slog.Logger) *ingest.Worker {
	return &ingest.Worker{Ledger: l, Broker: b, Policy: c.policy(), Master: c.master(), Software: software, Logger: log,
		Registries: c.registryStore(), EDI: c.ediRules(), Outbox: c.Outbox, Replies: c.replies(), Hardlinks: c.Hardlinks}
}

// replies is the reply policy of the configuration.
func (c *Config) replies() ingest.ReplyPolicy {
	return ingest.ReplyPolicy{Mode: c.ReplyMode, Partners: c.ReplyPartners, QuietParked: !c.ReplyParked,
		StandardSeparators: c.ReplySeparators == separatorsStandard, Syntax4Repetition: c.ReplySeparators == separatorsSyntax4,
		Installation: c.InstallationID}
}

// replyModeFlag is --reply-mode.
type replyModeFlag validate.ReplyMode

func (m *replyModeFlag) String() string {
	if m == nil {
		return ""
	}
	return string(*m)
}

func (m *replyModeFlag) Set(v string) error {
	if mode := validate.ReplyMode(v); mode.Valid() && mode != "" {
		*m = replyModeFlag(mode)
		return nil
	}
	return fmt.Errorf("%q: want both, contrl or aperak", v)
}

func (m *replyModeFlag) Type() string { return "mode" }

// partnerFlag is --reply-partner SENDER=MODE, repeatable.
type partnerFlag map[string]validate.ReplyMode

func (p *partnerFlag) String() string {
	if p == nil || len(*p) == 0 {
		return ""
	}
	var parts []string
	for k, v := range *p {
		parts = append(parts, k+"="+string(v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (p *partnerFlag) Type() string { return "partner" }

func (p *partnerFlag) Set(v string) error {
	sender, mode, ok := strings.Cut(v, "=")
	if m := validate.ReplyMode(mode); !ok || sender == "" || !m.Valid() || m == "" {
		return fmt.Errorf("%q: want SENDER=MODE with MODE both, contrl or aperak", v)
	}
	if *p == nil {
		*p = map[string]validate.ReplyMode{}
	}
	(*p)[sender] = validate.ReplyMode(mode)
	return nil
}

// operator wires the operator service over the same ledger, broker and
// rules as w: replays and re-checks follow the workers' policy.
func (c *Config) operator(w *ingest.Worker, b ingest.Enqueuer, insp ingest.Broker, opt asynq.RedisConnOpt) *ingest.Operator {
	op := &ingest.Operator{Ledger: w.Ledger, Enqueuer: b, Broker: insp, Policy: w.Policy, Software: software, Logger: w.Logger,
		Submit: ingest.SubmitOptions{Software: software, Hardlinks: c.Hardlinks}, Check: w.Check, Roots: c.IngestRoots, PublishQueues: ingest.QueuePublisher(opt)}
	// One client for the process's reconciliations (see Operator.Redis);
	// it lives as long as the process.
	if rc, ok := opt.MakeRedisClient().(redis.UniversalClient); ok {
		op.Redis = rc
	}
	op.Fleet = func(ctx context.Context) ([]ingest.WorkerRegistries, error) {
		rc, ok := opt.MakeRedisClient().(redis.UniversalClient)
		if !ok {
			return nil, nil
		}
		defer rc.Close()
		return ingest.FleetRegistries(ctx, rc)
	}
	if store := w.Registries; store != nil {
		op.Refresh = func() (string, string, error) {
			if _, err := store.Refresh(); err != nil {
				return "", "", err
			}
			r := store.Current()
			return r.LOCODE.Version(), r.HS.Version(), nil
		}
	}
	return op
}

func (c *Config) ediRules() validate.EDIRules {
	r := validate.DefaultEDIRules()
	r.VGMFloorKg, r.VGMMaxKg, r.StrictCharset, r.MaxRetainedBytes = c.VGMFloor, c.VGMMax, c.Strict, c.EDIRetained
	r.Directory = c.Directory
	r.Directories = c.agencySets
	return r
}

// loadAgencyDirs reads the agency directories AgencyDirs names into
// agencySets: every file whole, each problem named with its agency.
func (c *Config) loadAgencyDirs() error {
	var errs []error
	sets := map[string]*directory.Set{}
	for _, agency := range slices.Sorted(maps.Keys(c.AgencyDirs)) {
		file := c.AgencyDirs[agency]
		if agency == "" || agency == "UN" {
			errs = append(errs, fmt.Errorf("agency_directories %q: want another agency's code (the UN directory is built in)", agency))
			continue
		}
		set, err := readAgencyDir(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("agency_directories %s: %w", agency, err))
			continue
		}
		sets[agency] = set
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(sets) > 0 {
		c.agencySets = sets
	}
	return nil
}

// readAgencyDir reads and parses one agency directory file, at most
// directory.MaxSetBytes of it.
func readAgencyDir(file string) (*directory.Set, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, directory.MaxSetBytes+1))
	if err != nil {
		return nil, err
	}
	return directory.ParseSet(string(b))
}

// agencyDirFlag is --agency-directory AGENCY=FILE.
type agencyDirFlag map[string]string

func (a *agencyDirFlag) String() string {
	if a == nil || len(*a) == 0 {
		return ""
	}
	var parts []string
	for k, v := range *a {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (a *agencyDirFlag) Type() string { return "agency" }

func (a *agencyDirFlag) Set(v string) error {
	agency, file, ok := strings.Cut(v, "=")
	if !ok || agency == "" || file == "" {
		return fmt.Errorf("%q: want AGENCY=FILE", v)
	}
	if *a == nil {
		*a = map[string]string{}
	}
	(*a)[agency] = file
	return nil
}

// directoryFlag sets the checks of a DirectoryPolicy from
// "segments=reject,length=warn".
type directoryFlag validate.DirectoryPolicy

func (d *directoryFlag) String() string {
	if d == nil {
		return ""
	}
	p := validate.DirectoryPolicy(*d)
	return fmt.Sprintf("segments=%s,elements=%s,representation=%s,length=%s,codes=%s,unknown=%s", p.Segments, p.Elements, p.Representation, p.Length, p.Codes, p.Unknown)
}

func (d *directoryFlag) Type() string { return "checks" }

func (d *directoryFlag) Set(v string) error {
	p := (*validate.DirectoryPolicy)(d)
	checks := map[string]*validate.Action{"segments": &p.Segments, "elements": &p.Elements, "representation": &p.Representation,
		"length": &p.Length, "codes": &p.Codes, "unknown": &p.Unknown}
	for _, kv := range strings.Split(v, ",") {
		k, a, ok := strings.Cut(strings.TrimSpace(kv), "=")
		dst, known := checks[k]
		if !ok || !known {
			return fmt.Errorf("%q: want CHECK=ACTION with CHECK one of segments, elements, representation, length, codes, unknown", kv)
		}
		*dst = validate.Action(a)
	}
	return p.Validate()
}

func (c *Config) registryStore() *validate.RegistryStore {
	return &validate.RegistryStore{LOCODEFiles: c.LOCODE, HSFiles: c.HS}
}
