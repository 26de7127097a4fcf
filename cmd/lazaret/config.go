package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

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

// jsonSettings are the settings a config file may set, by key: every
// field of Config with a json tag, read from the struct itself so that a
// field and its key are declared once (the durations apart, since JSON
// spells them as strings), and the keys kept for files written before a
// rename (configAliases).
func (c *Config) jsonSettings() (map[string]any, map[string]*time.Duration) {
	known, durations := map[string]any{}, map[string]*time.Duration{}
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" || !f.IsExported() {
			continue
		}
		if d, ok := v.Field(i).Addr().Interface().(*time.Duration); ok {
			durations[key] = d
			continue
		}
		known[key] = v.Field(i).Addr().Interface()
	}
	for old, key := range configAliases {
		known[old] = known[key]
	}
	return known, durations
}

// configAliases are config file keys kept for files written before their
// setting was renamed: old key → key.
var configAliases = map[string]string{"contrl_parked": "reply_parked"}

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
