package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/lazaret/lazaret/edifact/directory"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// Config is everything a lazaret process can be told. Precedence: defaults,
// then a JSON config file (--config or LAZARET_CONFIG), then LAZARET_*
// environment variables, then flags.
type Config struct {
	RedisURL     string        `json:"redis_url"`
	Ledger       string        `json:"ledger"`
	Concurrency  int           `json:"concurrency"`
	MaxRetry     int           `json:"max_retry"`
	RetryBase    time.Duration `json:"retry_base"`
	RetryMax     time.Duration `json:"retry_max"`
	PoisonCap    int           `json:"poison_cap"`
	RoutingTries int           `json:"routing_budget"`
	RoutingBase  time.Duration `json:"routing_base"`
	RoutingMax   time.Duration `json:"routing_max"`
	DrainTimeout time.Duration `json:"drain_timeout"`
	// RefuseEvicting: a worker does not start against a Redis whose
	// maxmemory-policy evicts keys (see checkBrokerEviction). A flag of
	// worker and serve (refuseEvictingFlag), and a config file key.
	RefuseEvicting bool    `json:"refuse_evicting_redis"`
	PixelBudget    int64   `json:"pixel_budget"`
	MemoryBudget   int64   `json:"memory_budget"`
	MinDPI         float64 `json:"min_dpi"`
	RequireICC     bool    `json:"require_icc"`
	PrivateTags    string  `json:"private_tags"`
	Undecodable    string  `json:"undecodable"`
	DecodeAll      bool    `json:"decode_uncompressed"`
	// RefuseSamples are the sample formats a policy refuses in masters
	// (validate.SampleFormatNames).
	RefuseSamples []string                 `json:"refuse_sample_formats"`
	LOCODE        []string                 `json:"locode_files"`
	HS            []string                 `json:"hs_files"`
	VGMFloor      float64                  `json:"vgm_floor_kg"`
	VGMMax        float64                  `json:"vgm_max_kg"`
	Strict        bool                     `json:"strict_charset"`
	EDIRetained   int64                    `json:"interchange_budget"`
	Directory     validate.DirectoryPolicy `json:"edi_directory"`
	// AgencyDirs are other controlling agencies' message directories
	// (UNH 0051 -> a file in the format of edifact/directory/tables.txt),
	// read by Validate into agencySets.
	AgencyDirs map[string]string `json:"agency_directories"`
	agencySets map[string]*directory.Set
	Outbox     string `json:"contrl_outbox"`
	// Replies: which a sender gets (see ingest.ReplyPolicy). ReplyParked
	// is also read from the key contrl_parked, its name before APERAK.
	ReplyMode       validate.ReplyMode            `json:"reply_mode"`
	ReplyPartners   map[string]validate.ReplyMode `json:"reply_partners"`
	ReplyParked     bool                          `json:"reply_parked"`
	ReplySeparators string                        `json:"reply_separators"`
	IngestRoots     []string                      `json:"ingest_roots"`
	Hardlinks       []string                      `json:"hardlink_roots"`
	LogLevel        string                        `json:"log_level"`

	// InstallationID names this installation in its replies' control
	// references (ingest.ReplyPolicy.Installation); empty: the ledger's.
	InstallationID string `json:"installation_id"`

	// The checkpoint log (premis.CheckpointLog): where the ledger's head
	// is kept, signed, outside the database.
	CheckpointDir      string        `json:"checkpoint_dir"`
	CheckpointKey      string        `json:"checkpoint_key"`    // private key file (lazaret ledger keygen)
	CheckpointPubkey   string        `json:"checkpoint_pubkey"` // public key, or a file holding it
	CheckpointEvery    int64         `json:"checkpoint_every"`
	CheckpointInterval time.Duration `json:"checkpoint_interval"`
	VerifyEvery        time.Duration `json:"verify_every"` // serve: a full walk this often (0: never)

	ledgerDefault bool // Ledger is the default, not a setting
}

func defaultConfig() Config {
	p := ingest.DefaultPolicy()
	m := validate.DefaultMasterPolicy()
	return Config{
		RedisURL: "redis://127.0.0.1:6379/0", Concurrency: 2,
		MaxRetry: p.MaxRetry, RetryBase: p.RetryBase, RetryMax: p.RetryMax, PoisonCap: p.PoisonCap,
		RoutingTries: p.RoutingBudget, RoutingBase: p.RoutingBase, RoutingMax: p.RoutingMax, DrainTimeout: 30 * time.Second,
		PixelBudget: m.PixelBudget, MemoryBudget: m.MemoryBudget, MinDPI: m.Rules.MinDPI, RequireICC: m.Rules.RequireICC,
		PrivateTags: m.PrivateTags, Undecodable: m.Undecodable, LogLevel: "info",
		VGMFloor: validate.DefaultEDIRules().VGMFloorKg, VGMMax: validate.DefaultEDIRules().VGMMaxKg,
		Directory:       validate.DefaultDirectoryPolicy(),
		CheckpointEvery: premis.DefaultCheckpointEvery, CheckpointInterval: premis.DefaultCheckpointInterval, VerifyEvery: 24 * time.Hour,
		ReplyMode: validate.ReplyBoth, ReplyParked: true, ReplySeparators: separatorsSender,
	}
}

// Reply separators: the sender's (its UNA), or UNA:+.? '.
const (
	separatorsSender   = "sender"
	separatorsStandard = "standard"
	separatorsSyntax4  = "iso9735-4"
)

// declareSettings declares, on fs, the flags of the settings fields name
// ("redis", "ledger", "checkpoint", ...) and the ones every command has
// (--config, --log-level), bound to c: their defaults, in help, are c's.
func (c *Config) declareSettings(fs *pflag.FlagSet, fields []string) {
	fs.String("config", "", "JSON config `FILE` (env LAZARET_CONFIG); its keys are the snake_case names of the settings")
	for _, f := range fields {
		switch f {
		case "redis":
			fs.StringVar(&c.RedisURL, "redis", c.RedisURL, "Redis `URL` (redis://[:password@]host:port/db); env LAZARET_REDIS_URL")
		case "ledger":
			fs.StringVar(&c.Ledger, "ledger", c.Ledger, "the `LEDGER`: an SQLite file, or postgres://user@host/db for several machines (default $XDG_DATA_HOME/lazaret/ledger.db); env LAZARET_LEDGER")
		case "checkpoint":
			fs.StringVar(&c.CheckpointDir, "checkpoint-dir", c.CheckpointDir, "`DIR` of the checkpoint log: the ledger's head, signed, outside the database (env LAZARET_CHECKPOINT_DIR)")
			fs.StringVar(&c.CheckpointKey, "checkpoint-key", c.CheckpointKey, "private key `FILE` that signs checkpoints (lazaret ledger keygen; env LAZARET_CHECKPOINT_KEY)")
			fs.StringVar(&c.CheckpointPubkey, "checkpoint-pubkey", c.CheckpointPubkey, "public `KEY` (base64, or a file holding it) that checks checkpoints, without the signing key (env LAZARET_CHECKPOINT_PUBKEY)")
			fs.Int64Var(&c.CheckpointEvery, "checkpoint-every", c.CheckpointEvery, "checkpoint the head once it moved `N` events")
			fs.DurationVar(&c.CheckpointInterval, "checkpoint-interval", c.CheckpointInterval, "checkpoint a head that moved at least this often")
		case "verify":
			fs.DurationVar(&c.VerifyEvery, "verify-every", c.VerifyEvery, "walk the whole chain this often, for what the incremental checks cannot see, and record the result in the checkpoint log (0: never)")
		case "roots":
			fs.Var((*listFlag)(&c.IngestRoots), "ingest-root", "`DIR` manifests and corrected files must lie beneath (repeatable); the API reads nothing without one")
		case "links":
			fs.Var((*listFlag)(&c.Hardlinks), "allow-hardlinks", "let submitted files beneath `DIR` have more than one link (repeatable; a store that deduplicates with hard links); elsewhere they are refused as io.hardlink. Give submitters and workers the same")
		case "worker":
			fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "tasks processed at once")
			fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "on SIGTERM, how long running tasks may finish before they are handed back to the queue unrecorded")
		case "edi":
			fs.Var((*listFlag)(&c.LOCODE), "locode", "UN/LOCODE code list `FILE` (UNECE CSV, .bz2 too); repeat for several files")
			fs.Var((*listFlag)(&c.HS), "hs", "HS nomenclature CSV `FILE` with an hscode column; repeat for several files")
			fs.Float64Var(&c.VGMFloor, "vgm-floor", c.VGMFloor, "lowest plausible VGM in kg when the container size is unknown")
			fs.Float64Var(&c.VGMMax, "vgm-max", c.VGMMax, "highest plausible VGM in kg when the container size is unknown")
			fs.BoolVar(&c.Strict, "strict-charset", c.Strict, "quarantine messages with characters outside the declared syntax identifier")
			fs.Int64Var(&c.EDIRetained, "interchange-budget", c.EDIRetained, "bytes the verdicts of one interchange's messages may hold until its envelope is checked")
			fs.StringVar(&c.Outbox, "contrl-outbox", c.Outbox, "`DIR` for the replies: CONTRL for rejected interchanges (and accepted ones whose UNB asks for one), APERAK for parked messages")
			fs.Var((*replyModeFlag)(&c.ReplyMode), "reply-mode", "`MODE` of replies for senders not in --reply-partner: both (CONTRL for syntax, APERAK for business rules), contrl or aperak")
			fs.Var((*partnerFlag)(&c.ReplyPartners), "reply-partner", "`SENDER=MODE`: the reply mode of the sender with that UNB identification (repeatable)")
			fs.BoolVar(&c.ReplyParked, "reply-parked", c.ReplyParked, "answer the parked messages of accepted interchanges (APERAK, or CONTRL for contrl partners)")
			fs.BoolVar(&c.ReplyParked, "contrl-parked", c.ReplyParked, "the former name of --reply-parked")
			fs.StringVar(&c.InstallationID, "installation-id", c.InstallationID, "`ID` of this installation in the control references of its CONTRL and APERAK replies (default: the id of the ledger's first event)")
			fs.StringVar(&c.ReplySeparators, "reply-separators", c.ReplySeparators, "`SEPARATORS` of replies: sender (the interchange's UNA), standard (UNA:+.? ') or iso9735-4 (standard, and UNA:+.?*' to a syntax-4 interchange: ISO 9735-4's repetition separator, which the npm parsers edifact and ts-edifact refuse)")
			fs.Var((*agencyDirFlag)(&c.AgencyDirs), "agency-directory", "`AGENCY=FILE`: the message directory of a controlling agency other than UN (UNH 0051), in the format of edifact/directory/tables.txt; its messages are checked against it (repeatable)")
			fs.Var((*directoryFlag)(&c.Directory), "edi-directory", "message-directory checks, `CHECK=ACTION,...`: segments, elements, representation, length, codes, unknown; reject, warn or ignore")
		case "policy":
			fs.IntVar(&c.MaxRetry, "max-retry", c.MaxRetry, "retries for transient failures")
			fs.DurationVar(&c.RetryBase, "retry-base", c.RetryBase, "backoff ceiling of the first retry")
			fs.DurationVar(&c.RetryMax, "retry-max", c.RetryMax, "largest backoff ceiling")
			fs.IntVar(&c.PoisonCap, "poison-cap", c.PoisonCap, "attempt at which any failure goes to audit-hold")
			fs.IntVar(&c.RoutingTries, "routing-budget", c.RoutingTries, "deliveries that may end without a recorded decision (ledger or Redis down, worker killed) before the item is dead-lettered")
			fs.DurationVar(&c.RoutingBase, "routing-base", c.RoutingBase, "backoff ceiling of the first routing retry")
			fs.DurationVar(&c.RoutingMax, "routing-max", c.RoutingMax, "largest routing backoff ceiling")
		case "master":
			fs.Int64Var(&c.PixelBudget, "pixel-budget", c.PixelBudget, "pixels per page that may be decoded")
			fs.Int64Var(&c.MemoryBudget, "memory-budget", c.MemoryBudget, "bytes one master's decoding may hold (decoder buffers, strip and tile arrays)")
			fs.Float64Var(&c.MinDPI, "min-dpi", c.MinDPI, "lowest resolution_dpi a manifest may declare")
			fs.BoolVar(&c.RequireICC, "require-icc", c.RequireICC, "color_profile must match an embedded ICC profile")
			fs.StringVar(&c.PrivateTags, "private-tags", c.PrivateTags, "unrecognised TIFF tags: tolerate or reject")
			fs.StringVar(&c.Undecodable, "undecodable", c.Undecodable, "encodings the decoder cannot read: warn or reject")
			fs.Var((*listFlag)(&c.RefuseSamples), "refuse-sample-format", "refuse masters with samples in `FORMAT` as policy.sample-format (repeatable): uint, int, float, undefined, complex-int or complex-float")
			fs.BoolVar(&c.DecodeAll, "decode-uncompressed", c.DecodeAll, "run the image decoder over uncompressed pages too (slower; the walk already proves them)")
		}
	}
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "`LEVEL` of the JSON log on standard error: debug, info, warn or error")
}

// load applies the settings layers over c, the command's defaults: the
// config file (--config, else LAZARET_CONFIG), the environment, then the
// setting flags given on the command line (those flags has Changed), so
// that a flag the user gave wins. Then it validates the result.
func (c *Config) load(flags *pflag.FlagSet, fields []string) error {
	cfgFile := os.Getenv("LAZARET_CONFIG")
	if f := flags.Lookup("config"); f != nil && f.Changed {
		cfgFile = f.Value.String()
	}
	if cfgFile != "" {
		b, err := os.ReadFile(cfgFile)
		if err != nil {
			return usageErr("config: %v", err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return usageErr("config %s: %v", cfgFile, err)
		}
		if err := c.applyJSON(raw); err != nil {
			return usageErr("config %s: %v", cfgFile, err)
		}
	}
	c.applyEnv(fields)
	// The flags given: their values, as written, set again over c.
	fs := pflag.NewFlagSet("settings", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.declareSettings(fs, fields)
	var errs []error
	flags.Visit(func(f *pflag.Flag) {
		r := recordedOf(f.Value)
		if r == nil || fs.Lookup(f.Name) == nil {
			return
		}
		for _, v := range r.given {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", f.Name, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := c.Validate(); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("configuration: %w", err)}
	}
	if c.Ledger == "" {
		c.Ledger, c.ledgerDefault = defaultLedger(), true
	}
	return nil
}

// applyEnv applies the LAZARET_* variables of the settings fields name.
func (c *Config) applyEnv(fields []string) {
	vars := []struct {
		field, name string
		dst         *string
	}{
		{"redis", "LAZARET_REDIS_URL", &c.RedisURL},
		{"ledger", "LAZARET_LEDGER", &c.Ledger},
		{"checkpoint", "LAZARET_CHECKPOINT_DIR", &c.CheckpointDir},
		{"checkpoint", "LAZARET_CHECKPOINT_KEY", &c.CheckpointKey},
		{"checkpoint", "LAZARET_CHECKPOINT_PUBKEY", &c.CheckpointPubkey},
		{"", "LAZARET_LOG_LEVEL", &c.LogLevel},
	}
	for _, v := range vars {
		if v.field != "" && !slices.Contains(fields, v.field) {
			continue
		}
		if s, ok := os.LookupEnv(v.name); ok && s != "" {
			*v.dst = s
		}
	}
}

// recorded is a setting flag's value that keeps what the command line
// said, so that load can set it again over the file and the environment.
type recorded struct {
	pflag.Value
	given []string
}

func (r *recorded) Set(v string) error {
	if err := r.Value.Set(v); err != nil {
		return err
	}
	r.given = append(r.given, v)
	return nil
}

// recordedOf is the recorded value inside v, or nil.
func recordedOf(v pflag.Value) *recorded {
	for {
		switch x := v.(type) {
		case *recorded:
			return x
		case namedValue:
			v = x.Value
		default:
			return nil
		}
	}
}

// jsonSettings are the settings a config file may set, by key: the
// durations apart, since JSON spells them as strings.
func (c *Config) jsonSettings() (map[string]any, map[string]*time.Duration) {
	known := map[string]any{
		"redis_url": &c.RedisURL, "ledger": &c.Ledger, "concurrency": &c.Concurrency, "max_retry": &c.MaxRetry,
		"poison_cap": &c.PoisonCap, "routing_budget": &c.RoutingTries, "pixel_budget": &c.PixelBudget, "memory_budget": &c.MemoryBudget, "min_dpi": &c.MinDPI, "require_icc": &c.RequireICC,
		"private_tags": &c.PrivateTags, "undecodable": &c.Undecodable, "log_level": &c.LogLevel, "decode_uncompressed": &c.DecodeAll, "refuse_sample_formats": &c.RefuseSamples,
		"locode_files": &c.LOCODE, "hs_files": &c.HS, "vgm_floor_kg": &c.VGMFloor, "vgm_max_kg": &c.VGMMax, "strict_charset": &c.Strict, "interchange_budget": &c.EDIRetained,
		"contrl_outbox": &c.Outbox, "contrl_parked": &c.ReplyParked, "reply_parked": &c.ReplyParked, "reply_mode": &c.ReplyMode,
		"reply_partners": &c.ReplyPartners, "reply_separators": &c.ReplySeparators, "ingest_roots": &c.IngestRoots,
		"hardlink_roots": &c.Hardlinks, "edi_directory": &c.Directory, "agency_directories": &c.AgencyDirs, "installation_id": &c.InstallationID, "refuse_evicting_redis": &c.RefuseEvicting,
		"checkpoint_dir": &c.CheckpointDir, "checkpoint_key": &c.CheckpointKey, "checkpoint_pubkey": &c.CheckpointPubkey, "checkpoint_every": &c.CheckpointEvery,
	}
	durations := map[string]*time.Duration{"retry_base": &c.RetryBase, "retry_max": &c.RetryMax, "routing_base": &c.RoutingBase,
		"routing_max": &c.RoutingMax, "drain_timeout": &c.DrainTimeout, "checkpoint_interval": &c.CheckpointInterval, "verify_every": &c.VerifyEvery}
	return known, durations
}

func (c *Config) applyJSON(raw map[string]json.RawMessage) error {
	known, durations := c.jsonSettings()
	var errs []error
	for k, v := range raw {
		if d, ok := durations[k]; ok {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				errs = append(errs, fmt.Errorf("%s: want a duration string like \"2s\"", k))
				continue
			}
			dd, err := time.ParseDuration(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", k, err))
				continue
			}
			*d = dd
			continue
		}
		dst, ok := known[k]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown setting %q", k))
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", k, err))
		}
	}
	return errors.Join(errs...)
}

// Validate returns every problem with the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Concurrency < 1 || c.Concurrency > 1024 {
		errs = append(errs, fmt.Errorf("concurrency %d: want 1..1024", c.Concurrency))
	}
	if err := c.policy().Validate(); err != nil {
		errs = append(errs, err)
	}
	if !validInstallationID(c.InstallationID) {
		errs = append(errs, fmt.Errorf("installation_id %q: want at most 64 printable ASCII characters", c.InstallationID))
	}
	if err := c.master().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Directory.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("edi_directory: %w", err))
	}
	if err := c.loadAgencyDirs(); err != nil {
		errs = append(errs, err)
	}
	if !c.ReplyMode.Valid() {
		errs = append(errs, fmt.Errorf("reply mode %q: want both, contrl or aperak", c.ReplyMode))
	}
	for sender, m := range c.ReplyPartners {
		if !m.Valid() || m == "" {
			errs = append(errs, fmt.Errorf("reply partner %q: mode %q: want both, contrl or aperak", sender, m))
		}
	}
	if c.ReplySeparators != separatorsSender && c.ReplySeparators != separatorsStandard && c.ReplySeparators != separatorsSyntax4 {
		errs = append(errs, fmt.Errorf("reply separators %q: want sender, standard or iso9735-4", c.ReplySeparators))
	}
	if c.VGMFloor < 0 || c.VGMMax <= c.VGMFloor {
		errs = append(errs, fmt.Errorf("VGM range %v..%v kg: want 0 <= floor < max", c.VGMFloor, c.VGMMax))
	}
	if c.MinDPI < 0 {
		errs = append(errs, fmt.Errorf("min dpi %v: want >= 0", c.MinDPI))
	}
	if c.CheckpointEvery < 1 {
		errs = append(errs, fmt.Errorf("checkpoint_every %d: want at least 1 event", c.CheckpointEvery))
	}
	if c.VerifyEvery < 0 {
		errs = append(errs, fmt.Errorf("verify_every %v: want 0 (never) or a positive duration", c.VerifyEvery))
	}
	if c.CheckpointInterval <= 0 {
		errs = append(errs, fmt.Errorf("checkpoint_interval %v: want a positive duration", c.CheckpointInterval))
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log level %q: want debug, info, warn or error", c.LogLevel))
	}
	return errors.Join(errs...)
}

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

func (c *Config) redis() (asynq.RedisConnOpt, error) {
	opt, err := asynq.ParseRedisURI(c.RedisURL)
	if err != nil {
		return nil, usageErr("redis URL %q: %v", redactURL(c.RedisURL), err)
	}
	// A Sentinel URL without a master name parses, and then fails every
	// call after a 15 s timeout: refuse it before anything is recorded.
	if f, ok := opt.(asynq.RedisFailoverClientOpt); ok {
		const form = "redis-sentinel://[:password@]host:port[,host:port...][/db]?master=NAME"
		u, _ := url.Parse(c.RedisURL)
		switch {
		case f.MasterName == "" && u != nil && strings.Trim(u.Path, "/") != "" && !isDigits(strings.Trim(u.Path, "/")):
			return nil, usageErr("redis URL %q: the master's name goes in ?master=%s, not in the path: want %s", redactURL(c.RedisURL), strings.Trim(u.Path, "/"), form)
		case f.MasterName == "":
			return nil, usageErr("redis URL %q: a Sentinel URL needs the master's name: want %s", redactURL(c.RedisURL), form)
		case len(f.SentinelAddrs) == 0:
			return nil, usageErr("redis URL %q: no Sentinel address: want %s", redactURL(c.RedisURL), form)
		}
	}
	return opt, nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// connect parses the Redis URL and opens the ledger.
func (c *Config) connect(ctx context.Context) (asynq.RedisConnOpt, premis.Ledger, error) {
	opt, err := c.redis()
	if err != nil {
		return nil, nil, err
	}
	l, err := c.openLedger(ctx)
	if err != nil {
		return nil, nil, err
	}
	// Concurrent handlers' appends share transactions (one fsync, one move
	// of the chain head): see premis.GroupCommit. Close stops it.
	return opt, premis.NewGroupCommit(l, 0), nil
}

// backend is the ledger backend the setting's scheme names (see
// premis.RegisterBackend; the packages imported in main.go register).
func (c *Config) backend() (premis.Backend, error) {
	b, err := premis.BackendFor(c.Ledger)
	if err != nil {
		return b, settingErr("ledger: %v", err)
	}
	return b, nil
}

// ledgerExists refuses an SQLite ledger that is not there: a command that
// reads or acts on what is recorded must not create an empty ledger and
// report an empty dead-letter queue (a mistyped --ledger, or none in this
// folder).
func (c *Config) ledgerExists() error {
	if c.Ledger == "" {
		return settingErr("no ledger: there is no data directory ($XDG_DATA_HOME or $HOME) for the default; say --ledger or LAZARET_LEDGER")
	}
	b, err := c.backend()
	if err != nil || b.File == nil {
		return err
	}
	_, err = os.Stat(b.File(c.Ledger))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrNotExist) && c.ledgerDefault:
		return settingErr("no ledger at %s (the default): no worker has written one there; say --ledger or LAZARET_LEDGER for the workers' ledger", c.Ledger)
	case errors.Is(err, os.ErrNotExist):
		return settingErr("no ledger at %s: say --ledger or LAZARET_LEDGER for the workers' ledger (nothing was created)", c.Ledger)
	}
	return settingErr("ledger %s: %v", c.Ledger, err)
}

// connectExisting is connect for commands that act on what is recorded:
// the ledger must exist.
func (c *Config) connectExisting(ctx context.Context) (asynq.RedisConnOpt, premis.Ledger, error) {
	if err := c.ledgerExists(); err != nil {
		return nil, nil, err
	}
	return c.connect(ctx)
}

// openLedger opens the ledger for writing: a postgres:// URL, or an SQLite
// file path (created, with its folder, when missing).
func (c *Config) openLedger(ctx context.Context) (premis.Ledger, error) {
	if c.Ledger == "" {
		return nil, c.ledgerExists()
	}
	b, err := c.backend()
	if err != nil {
		return nil, err
	}
	l, err := b.Open(ctx, c.Ledger)
	if err != nil {
		return nil, err
	}
	if p, ok := l.(interface{ SetReaders(int) }); ok {
		p.SetReaders(c.Concurrency + 2) // the handlers, the API and metrics
	}
	return l, nil
}

// openExistingLedger opens an existing ledger as workers do (schema and
// guard checks included).
func (c *Config) openExistingLedger(ctx context.Context) (premis.Ledger, error) {
	if err := c.ledgerExists(); err != nil {
		return nil, err
	}
	return c.openLedger(ctx)
}

// openReadOnly opens an existing ledger for a read command: one that
// reading never writes, migrates or creates (see premis.Backend.OpenRead).
// A ledger whose append-only guards or head record are gone is refused, as
// Open refuses it (premis.ErrTampered), rather than shown.
func (c *Config) openReadOnly(ctx context.Context) (premis.Ledger, error) {
	if err := c.ledgerExists(); err != nil {
		return nil, err
	}
	b, err := c.backend()
	if err != nil {
		return nil, err
	}
	l, err := b.OpenRead(ctx, c.Ledger)
	if errors.Is(err, premis.ErrNotLedger) {
		return nil, &exitError{code: 2, err: err}
	}
	return l, err
}

// defaultLedger is $XDG_DATA_HOME/lazaret/ledger.db, or
// ~/.local/share/lazaret/ledger.db; "" when neither can be known.
func defaultLedger() string {
	dir := os.Getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(dir) { // the XDG spec: a relative value is ignored
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "lazaret", "ledger.db")
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

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Type() string   { return "strings" }
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// observedLedger times and counts the appends of a group committer; every
// other method is the committer's own (Walk, Guards...), so what asks the
// ledger for them still finds them.
type observedLedger struct {
	*premis.GroupCommit
	observe func(time.Duration, error)
}

func (o observedLedger) Append(ctx context.Context, events ...*premis.Event) ([]bool, error) {
	start := time.Now()
	ins, err := o.GroupCommit.Append(ctx, events...)
	o.observe(time.Since(start), err)
	return ins, err
}

// AppendFirst is observed as Append is. A condition that does not hold
// (premis.ErrNotFirst) is no failure of the ledger.
func (o observedLedger) AppendFirst(ctx context.Context, firsts []premis.FirstDelivery, events ...*premis.Event) ([]bool, error) {
	start := time.Now()
	ins, err := o.GroupCommit.AppendFirst(ctx, firsts, events...)
	if errors.Is(err, premis.ErrNotFirst) {
		o.observe(time.Since(start), nil)
	} else {
		o.observe(time.Since(start), err)
	}
	return ins, err
}

// observeAppends wraps l, the group committer connect opened, so that
// observe hears of every append; another ledger is returned as it is.
func observeAppends(l premis.Ledger, observe func(time.Duration, error)) premis.Ledger {
	if g, ok := l.(*premis.GroupCommit); ok {
		return observedLedger{g, observe}
	}
	return l
}

// suggestFlag adds "did you mean --X?" to pflag's error for an unknown
// flag, when a declared one is close: an edit or two away, or one it
// begins.
// A long flag written with one dash (-ledger), which pflag reads as
// shorthands, is pointed at its two-dash form.
func suggestFlag(fs *pflag.FlagSet, err error) error {
	if rest, ok := strings.CutPrefix(err.Error(), "unknown shorthand flag: "); ok {
		if _, word, ok := strings.Cut(rest, " in -"); ok {
			if name, _, _ := strings.Cut(word, "="); len(name) > 1 && fs.Lookup(name) != nil {
				return fmt.Errorf("unknown flag -%s: did you mean --%s?", name, name)
			}
		}
		return err
	}
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	best, bestD := "", 3 // at most two edits away
	fs.VisitAll(func(f *pflag.Flag) {
		if d := editDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" { // --pipeline for --pipeline-items
		fs.VisitAll(func(f *pflag.Flag) {
			if best == "" && len(name) >= 3 && strings.HasPrefix(f.Name, name) {
				best = f.Name
			}
		})
	}
	if best == "" {
		return fmt.Errorf("unknown flag --%s", name)
	}
	return fmt.Errorf("unknown flag --%s: did you mean --%s?", name, best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// validInstallationID reports whether id may name an installation: empty
// (the ledger's), or up to 64 printable ASCII characters.
func validInstallationID(id string) bool {
	if len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f {
			return false
		}
	}
	return true
}
