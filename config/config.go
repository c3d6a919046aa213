package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// Profiles.
const (
	ProfileMemory   = "memory"
	ProfileReadonly = "readonly"
)

// Config is every setting of SPEC 8, after flags and environment.
type Config struct {
	DB               string
	Profile          string
	QueryTimeout     time.Duration
	DefaultLimit     int
	MaxRows          int
	MaxResultBytes   int
	MaxCellChars     int
	MaxUpdateRows    int
	SearchCandidates int
	Snapshots        int
	SnapshotDir      string
	SnapshotTimeout  time.Duration
	SnapshotMode     ipc.SnapshotKind
	SnapshotFullMB   int
	Confirm          string
	ConfirmTimeout   time.Duration
	WorkerMemoryMB   int
	MaxGrowthMB      int
	MaxWorkers       int
	StandbyWorkers   int
	Worker           string
	AuditDB          string
	AuditQueryBytes  int
	Replicate        string
	Litestream       string
	RG               string
	EmbeddingModel   string // a Model2Vec directory (docs/recall.md); "": word ranking only
	Sandbox          bool
	Verbose          bool
	HTTPConfig       // --http and its companions (SPEC 11, http.go)
	ClusterConfig    // --rqlite and --rqlite-data (SPEC 13, cluster.go)
}

// --confirm values (SPEC 5.5).
const (
	ConfirmDestructive = "destructive"
	ConfirmWrites      = "writes"
	ConfirmRequired    = "required"
	ConfirmOff         = "off"
)

// standbyAuto marks --standby-workers left at auto: as many as
// --max-workers allows, at most maxAutoStandby, so that a burst of four
// parallel calls (what MCP hosts send) meets four workers started ahead.
const (
	standbyAuto    = -1
	maxAutoStandby = 4
)

// UsageError is a bad command line or environment: the caller prints it and
// exits with status 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// option is one setting: its flag, environment variables, default and how
// to read and check a value.
type option struct {
	flag  string
	env   []string
	def   string
	help  string
	apply func(c *Config, v string) error
}

func intOption(flagName, env, def, help string, min, max int, set func(*Config, int)) option {
	return option{flag: flagName, env: []string{env}, def: def, help: help, apply: func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < min || n > max {
			return fmt.Errorf("must be a whole number from %d to %d", min, max)
		}
		set(c, n)
		return nil
	}}
}

func stringOption(flagName string, env []string, def, help string, set func(*Config, string)) option {
	return option{flag: flagName, env: env, def: def, help: help, apply: func(c *Config, v string) error {
		set(c, v)
		return nil
	}}
}

func options() []option {
	all := serverOptions()
	verbose := len(all) - 1
	// Cluster mode (SPEC 13, cluster.go) before --verbose, as --help lists them.
	return append(append(all[:verbose:verbose], clusterOptions()...), all[verbose])
}

func serverOptions() []option {
	return []option{
		stringOption("db", []string{"MCP_SQLITE_DB", "DATABASE_PATH"}, "", "database file (created with its folder if missing; readonly profile: shop.db)", func(c *Config, v string) { c.DB = v }),
		{flag: "profile", env: []string{"MCP_SQLITE_PROFILE"}, def: ProfileMemory, help: "memory (all tools) or readonly (three JSON tools, database opened read-only)", apply: func(c *Config, v string) error {
			if v != ProfileMemory && v != ProfileReadonly {
				return errors.New("must be memory or readonly")
			}
			c.Profile = v
			return nil
		}},
		{flag: "query-timeout", env: []string{"MCP_SQLITE_QUERY_TIMEOUT"}, def: "10", help: "seconds a statement may run before its worker is stopped", apply: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0.1 || f > 3600 || math.IsNaN(f) {
				return errors.New("must be a number of seconds from 0.1 to 3600")
			}
			c.QueryTimeout = time.Duration(f * float64(time.Second))
			return nil
		}},
		intOption("default-limit", "MCP_SQLITE_DEFAULT_LIMIT", "100", "rows returned when a call gives no limit", 1, 1_000_000, func(c *Config, n int) { c.DefaultLimit = n }),
		intOption("max-rows", "MCP_SQLITE_MAX_ROWS", "1000", "largest limit a call may ask for", 1, 1_000_000, func(c *Config, n int) { c.MaxRows = n }),
		intOption("max-result-bytes", "MCP_SQLITE_MAX_RESULT_BYTES", "32768", "cap on a result's CSV bytes (at least one row is always kept)", 256, 1<<30, func(c *Config, n int) { c.MaxResultBytes = n }),
		intOption("max-cell-chars", "MCP_SQLITE_MAX_CELL_CHARS", "2000", "longer cells are cut to this many characters", 8, 1<<30, func(c *Config, n int) { c.MaxCellChars = n }),
		intOption("max-update-rows", "MCP_SQLITE_MAX_UPDATE_ROWS", "500", "an UPDATE in write_query changing more rows is rolled back", 1, math.MaxInt32, func(c *Config, n int) { c.MaxUpdateRows = n }),
		intOption("search-candidates", "MCP_SQLITE_SEARCH_CANDIDATES", "5000", "rows search_text reads at most", 1, 10_000_000, func(c *Config, n int) { c.SearchCandidates = n }),
		intOption("snapshots", "MCP_SQLITE_SNAPSHOTS", "5", "snapshots kept, of destructive_query and the snapshot tool (0 disables them)", 0, 10_000, func(c *Config, n int) { c.Snapshots = n }),
		stringOption("snapshot-dir", []string{"MCP_SQLITE_SNAPSHOT_DIR"}, "", "snapshot folder (default <db dir>/<stem>.snapshots)", func(c *Config, v string) { c.SnapshotDir = v }),
		{flag: "snapshot-timeout", env: []string{"MCP_SQLITE_SNAPSHOT_TIMEOUT"}, def: "300", help: "seconds destructive_query's snapshot may take; the statement's --query-timeout starts after it", apply: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0.1 || f > 86400 || math.IsNaN(f) {
				return errors.New("must be a number of seconds from 0.1 to 86400")
			}
			c.SnapshotTimeout = time.Duration(f * float64(time.Second))
			return nil
		}},
		{flag: "snapshot-mode", env: []string{"MCP_SQLITE_SNAPSHOT_MODE"}, def: string(ipc.SnapshotAuto), help: "what destructive_query snapshots: auto (an undo record of the statement's changes above --snapshot-full-mb, else a full copy), full (always a copy of the database) or undo (always an undo record)", apply: func(c *Config, v string) error {
			switch k := ipc.SnapshotKind(strings.TrimSpace(v)); k {
			case ipc.SnapshotAuto, ipc.SnapshotFull, ipc.SnapshotUndo:
				c.SnapshotMode = k
				return nil
			}
			return errors.New("must be auto, full or undo")
		}},
		intOption("snapshot-full-mb", "MCP_SQLITE_SNAPSHOT_FULL_MB", "64", "with --snapshot-mode auto, databases up to this many MiB get a full copy, larger ones an undo record", 0, 1<<22, func(c *Config, n int) { c.SnapshotFullMB = n }),
		{flag: "confirm", env: []string{"MCP_SQLITE_CONFIRM"}, def: ConfirmDestructive, help: "ask the person (MCP elicitation) before: destructive (destructive_query), writes (also overwriting write_query statements and create_view replace=true), required (as destructive, and refuse destructive_query for clients that cannot ask), off", apply: func(c *Config, v string) error {
			switch v = strings.ToLower(strings.TrimSpace(v)); v {
			case ConfirmDestructive, ConfirmWrites, ConfirmRequired, ConfirmOff:
				c.Confirm = v
				return nil
			}
			return errors.New("must be destructive, writes, required or off")
		}},
		{flag: "confirm-timeout", env: []string{"MCP_SQLITE_CONFIRM_TIMEOUT"}, def: "120", help: "seconds the person has to answer a confirmation; no answer declines", apply: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0.1 || f > 86400 || math.IsNaN(f) {
				return errors.New("must be a number of seconds from 0.1 to 86400")
			}
			c.ConfirmTimeout = time.Duration(f * float64(time.Second))
			return nil
		}},
		intOption("worker-memory-mb", "MCP_SQLITE_WORKER_MEMORY_MB", "256", "memory limit of each worker process in MiB", 128, 1<<20, func(c *Config, n int) { c.WorkerMemoryMB = n }),
		intOption("max-growth-mb", "MCP_SQLITE_MAX_GROWTH_MB", "512", "MiB one statement may add to the database", 1, 1<<22, func(c *Config, n int) { c.MaxGrowthMB = n }),
		intOption("max-workers", "MCP_SQLITE_MAX_WORKERS", "4", "worker processes alive at once: running a statement, standing by or starting", 1, 256, func(c *Config, n int) { c.MaxWorkers = n }),
		{flag: "standby-workers", env: []string{"MCP_SQLITE_STANDBY_WORKERS"}, def: "auto", help: "workers kept started and confined ahead, so that calls (bursts of parallel calls too) meet no process start; part of --max-workers; 0 turns it off (auto: --max-workers, at most 4)", apply: func(c *Config, v string) error {
			if strings.TrimSpace(v) == "auto" {
				c.StandbyWorkers = standbyAuto
				return nil
			}
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 || n > 256 {
				return errors.New("must be auto or a whole number from 0 to 256")
			}
			c.StandbyWorkers = n
			return nil
		}},
		stringOption("worker", []string{"MCP_SQLITE_WORKER"}, "", "worker binary (default: mcp-sqlite-memory-worker beside this binary, else this binary re-run in worker mode)", func(c *Config, v string) { c.Worker = v }),
		stringOption("audit-db", []string{"MCP_SQLITE_AUDIT_DB"}, "", "readonly profile: also write audit rows to this SQLite file", func(c *Config, v string) { c.AuditDB = v }),
		intOption("audit-query-bytes", "MCP_SQLITE_AUDIT_QUERY_BYTES", "65536", "bytes of a call's SQL an audit row keeps (longer SQL: this prefix, its length and sha256)", 256, 1<<30, func(c *Config, n int) { c.AuditQueryBytes = n }),
		stringOption("replicate", []string{"MCP_SQLITE_REPLICATE"}, "", "Litestream config file: run `litestream replicate` beside the server, stopped with a final sync (docs/replication.md)", func(c *Config, v string) { c.Replicate = v }),
		stringOption("litestream", []string{"MCP_SQLITE_LITESTREAM"}, "litestream", "Litestream binary for --replicate", func(c *Config, v string) { c.Litestream = v }),
		stringOption("embedding-model", []string{"MCP_SQLITE_EMBEDDING_MODEL"}, "", "a Model2Vec static embedding model's directory (model.safetensors, tokenizer.json): recall re-ranks its word matches with vectors; never downloaded (docs/recall.md)", func(c *Config, v string) { c.EmbeddingModel = v }),
		stringOption("rg", []string{"MCP_SQLITE_RG"}, "", "accepted for compatibility with the reference server; matching is built in", func(c *Config, v string) { c.RG = v }),
		{flag: "sandbox", env: []string{"MCP_SQLITE_SANDBOX"}, def: "on", help: "on, or off for debugging only", apply: func(c *Config, v string) error {
			switch strings.ToLower(v) {
			case "on", "true", "1":
				c.Sandbox = true
			case "off", "false", "0":
				c.Sandbox = false
			default:
				return errors.New("must be on or off")
			}
			return nil
		}},
		// SPEC 11: Streamable HTTP (http.go).
		stringOption("http", []string{"MCP_SQLITE_HTTP"}, "", "serve MCP over Streamable HTTP at ADDR (host:port) under /mcp instead of stdio; needs --auth-tokens or --oauth-issuer (docs/http.md)", func(c *Config, v string) { c.HTTP = strings.TrimSpace(v) }),
		stringOption("auth-tokens", []string{"MCP_SQLITE_AUTH_TOKENS"}, "", "the agents' token file for --http (make one: mcp-sqlite-memory token add NAME --auth-tokens FILE)", func(c *Config, v string) { c.AuthTokens = v }),
		// SPEC 11.2: OAuth 2.1 (server/oauth).
		stringOption("oauth-issuer", []string{"MCP_SQLITE_OAUTH_ISSUER"}, "", "under --http, accept access tokens of this OAuth authorization server (its issuer URL; needs --resource; docs/http.md)", func(c *Config, v string) { c.OAuthIssuer = strings.TrimSpace(v) }),
		stringOption("resource", []string{"MCP_SQLITE_RESOURCE"}, "", "this server's canonical URL for --oauth-issuer, such as https://memory.example.com/mcp: the audience its tokens must name", func(c *Config, v string) { c.Resource = strings.TrimSpace(v) }),
		stringOption("oauth-introspection-secret", []string{"MCP_SQLITE_OAUTH_INTROSPECTION_SECRET"}, "", "a file holding CLIENT_ID:CLIENT_SECRET, this server's credentials for the issuer's token introspection (opaque tokens)", func(c *Config, v string) { c.OAuthIntrospectSecret = v }),
		secondsOption("oauth-cache-s", "MCP_SQLITE_OAUTH_CACHE_S", "60", "seconds a checked access token (a JWT, an introspection answer) is reused at most (never past its expiry)", func(c *Config, d time.Duration) { c.OAuthCache = d }),
		stringOption("oauth-agent-claim", []string{"MCP_SQLITE_OAUTH_AGENT_CLAIM"}, "", "the access token claim that names the agent (default: client_id, else sub); shown as oauth:NAME", func(c *Config, v string) { c.OAuthAgentClaim = strings.TrimSpace(v) }),
		listOption("allowed-origins", "MCP_SQLITE_ALLOWED_ORIGINS", "browser Origins allowed under --http, comma-separated (scheme://host[:port]); requests without Origin pass", func(c *Config, l []string) { c.AllowedOrigins = l }),
		listOption("allowed-hosts", "MCP_SQLITE_ALLOWED_HOSTS", "Host names clients may address under --http, comma-separated (default: the --http host; localhost too for a loopback address)", func(c *Config, l []string) { c.AllowedHosts = l }),
		intOption("max-calls-per-agent", "MCP_SQLITE_MAX_CALLS_PER_AGENT", "0", "tool calls one agent may have in flight under --http (0: --max-workers)", 0, 4096, func(c *Config, n int) { c.MaxCallsPerAgent = n }),
		intOption("max-queued-per-agent", "MCP_SQLITE_MAX_QUEUED_PER_AGENT", "64", "tool calls of one agent that may wait in line under --http when it has --max-calls-per-agent in flight; more are refused", 0, 1<<16, func(c *Config, n int) { c.MaxQueuedPerAgent = n }),
		secondsOption("queue-wait", "MCP_SQLITE_QUEUE_WAIT", "60", "seconds a call may wait in line for one of its agent's --max-calls-per-agent under --http before it is refused", func(c *Config, d time.Duration) { c.QueueWait = d }),
		stringOption("tls-cert", []string{"MCP_SQLITE_TLS_CERT"}, "", "serve --http as HTTPS with this certificate (PEM; with --tls-key)", func(c *Config, v string) { c.TLSCert = v }),
		stringOption("tls-key", []string{"MCP_SQLITE_TLS_KEY"}, "", "the private key of --tls-cert (PEM)", func(c *Config, v string) { c.TLSKey = v }),
		intOption("max-connections", "MCP_SQLITE_MAX_CONNECTIONS", "256", "open HTTP connections at most under --http; those not yet authenticated hold at most half, and the oldest of them is closed to make room", 1, 1<<20, func(c *Config, n int) { c.MaxConnections = n }),
		intOption("max-sessions", "MCP_SQLITE_MAX_SESSIONS", "256", "2025-11-25 MCP sessions at most under --http (a session is opened only by initialize)", 1, 1<<20, func(c *Config, n int) { c.MaxSessions = n }),
		intOption("max-sessions-per-agent", "MCP_SQLITE_MAX_SESSIONS_PER_AGENT", "0", "2025-11-25 sessions one agent may have open under --http (0: --max-sessions / 8, at least 1)", 0, 1<<20, func(c *Config, n int) { c.MaxSessionsPerAgent = n }),
		secondsOption("session-idle", "MCP_SQLITE_SESSION_IDLE", "300", "seconds a 2025-11-25 session with no open stream and no request in flight lives on under --http", func(c *Config, d time.Duration) { c.SessionIdle = d }),
		intOption("max-body-mb", "MCP_SQLITE_MAX_BODY_MB", "16", "largest HTTP request body in MiB under --http (413 above)", 1, 1024, func(c *Config, n int) { c.MaxBodyMB = n }),
		secondsOption("body-timeout", "MCP_SQLITE_BODY_TIMEOUT", "60", "seconds a client has to send a request body under --http (408 and the connection closed after)", func(c *Config, d time.Duration) { c.BodyTimeout = d }),
		secondsOption("header-timeout", "MCP_SQLITE_HEADER_TIMEOUT", "10", "seconds a client has to send its request headers under --http", func(c *Config, d time.Duration) { c.HeaderTimeout = d }),
		secondsOption("shutdown-grace", "MCP_SQLITE_SHUTDOWN_GRACE", "10", "seconds calls in flight may take to finish after SIGTERM under --http before they are stopped", func(c *Config, d time.Duration) { c.ShutdownGrace = d }),
		{flag: "verbose", env: []string{"MCP_SQLITE_VERBOSE"}, def: "false", help: "debug logging on stderr (also -v)", apply: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New("must be true or false")
			}
			c.Verbose = b
			return nil
		}},
	}
}

// Parse reads the environment, then flags (which win), and checks the
// result. Problems come back as *UsageError naming what to type instead.
// Positional arguments left after the flags are returned.
func Parse(args []string, getenv func(string) string, usage io.Writer) (*Config, []string, error) {
	opts := options()
	c := &Config{}
	for _, o := range opts {
		v, from := o.def, ""
		for _, env := range o.env {
			if e := getenv(env); e != "" {
				v, from = e, env
				break
			}
		}
		if err := o.apply(c, v); err != nil {
			return nil, nil, &UsageError{fmt.Sprintf("invalid value %q in environment variable %s: %v", v, from, err)}
		}
	}

	fs := flag.NewFlagSet("mcp-sqlite-memory", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var flagErr error
	for _, o := range opts {
		if o.flag == "verbose" {
			fs.BoolFunc("verbose", o.help, func(v string) error { return o.apply(c, v) })
			fs.BoolFunc("v", "same as --verbose", func(v string) error { return o.apply(c, v) })
			continue
		}
		fs.Func(o.flag, o.help, func(v string) error {
			if err := o.apply(c, v); err != nil {
				flagErr = &UsageError{fmt.Sprintf("invalid value %q for --%s: %v\nTry: --%s %s", v, o.flag, err, o.flag, o.def)}
				return err
			}
			return nil
		})
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			PrintUsage(usage)
			return nil, nil, err
		}
		if flagErr != nil {
			return nil, nil, flagErr
		}
		return nil, nil, &UsageError{flagError(err, opts)}
	}
	if err := c.check(); err != nil {
		return nil, nil, err
	}
	return c, fs.Args(), nil
}

func (c *Config) check() error {
	if c.Profile == ProfileReadonly && c.DB == "" {
		c.DB = "shop.db"
	}
	if c.EmbeddingModel != "" && c.Profile == ProfileReadonly {
		return &UsageError{"--embedding-model is for the memory profile (the readonly profile has no memory to recall)\nTry: drop --embedding-model, or --profile memory"}
	}
	if c.DefaultLimit > c.MaxRows {
		return &UsageError{fmt.Sprintf("--default-limit %d is larger than --max-rows %d\nTry: --default-limit %d", c.DefaultLimit, c.MaxRows, c.MaxRows)}
	}
	if c.StandbyWorkers == standbyAuto {
		c.StandbyWorkers = min(c.MaxWorkers, maxAutoStandby)
	}
	if c.StandbyWorkers > c.MaxWorkers {
		return &UsageError{fmt.Sprintf("--standby-workers %d is larger than --max-workers %d (standby workers count toward it)\nTry: --standby-workers %d, or --max-workers %d", c.StandbyWorkers, c.MaxWorkers, c.MaxWorkers, c.StandbyWorkers)}
	}
	if err := c.checkHTTP(); err != nil {
		return err
	}
	if err := c.checkCluster(); err != nil {
		return err
	}
	if c.DB != "" && c.SnapshotDir == "" {
		c.SnapshotDir = filepath.Join(filepath.Dir(c.DB), Stem(c.DB)+".snapshots")
	}
	return nil
}

// RequireDB reports the missing --db as a usage error.
func (c *Config) RequireDB() error {
	if c.DB == "" && !c.Clustered() {
		return &UsageError{"no database given\nTry: mcp-sqlite-memory --db ./memory.db   (or set MCP_SQLITE_DB)"}
	}
	return nil
}

// flagError rewrites the flag package's error for an unknown flag, which
// prints it with one dash ("flag provided but not defined: -dbb"), as the
// help writes flags, with the closest real one.
func flagError(err error, opts []option) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err.Error() + "\nTry: mcp-sqlite-memory --help"
	}
	var flags []string
	for _, o := range opts {
		flags = append(flags, o.flag)
	}
	msg := "unknown flag --" + name
	if near := Closest(name, flags); near != "" {
		msg += "; did you mean --" + near + "?"
	}
	return msg + "\nTry: mcp-sqlite-memory --help"
}

// Closest returns the candidate nearest to s by edit distance, or "" when
// none is near enough to be a likely typo (more than a third of s's
// letters away).
func Closest(s string, candidates []string) string {
	best, bestD := "", len(s)/3+2
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
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

// DBPathProblem explains, as a usage error naming what to type instead, a
// --db that cannot be a database file: a folder, or a path under a file.
// nil when the path may be opened or created.
func DBPathProblem(db string) error {
	abs, err := filepath.Abs(db)
	if err != nil {
		return nil
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return &UsageError{fmt.Sprintf("--db %s is a folder; name a database file inside it\nTry: --db %s", db, filepath.Join(abs, "memory.db"))}
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return &UsageError{fmt.Sprintf("--db %s is under %s, which is a file, not a folder; put the database in a folder\nTry: --db %s", db, dir, filepath.Join(filepath.Dir(dir), filepath.Base(abs)))}
			}
			return nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			return nil
		}
	}
}

// PathWarning is the one warning a server gives about its --db (empty when
// there is none): a path starting with a literal "~" (no shell expanded
// it, as in an MCP host's JSON config: it names a folder called "~"), or a
// relative one (it follows the working directory the host starts the
// server in, so each project may silently get its own file). It says what
// the path resolved to and how to write it.
func PathWarning(db string) string {
	abs, err := filepath.Abs(db)
	if err != nil {
		return ""
	}
	switch {
	case strings.HasPrefix(db, "~"):
		suggest := "the absolute path"
		if rest, ok := strings.CutPrefix(db, "~"); ok && (rest == "" || rest[0] == '/' || rest[0] == '\\') {
			if home, err := os.UserHomeDir(); err == nil {
				suggest = filepath.Join(home, rest)
			}
		}
		return fmt.Sprintf("--db %q starts with a literal \"~\", which only a shell expands: it resolved to %s, inside a folder named \"~\". Write the path in full: --db %s",
			db, abs, suggest)
	case !filepath.IsAbs(db):
		return fmt.Sprintf("--db %q is relative, so it follows the working directory the server was started in: it resolved to %s. Write an absolute path (--db %s) so that every session finds the same file", db, abs, abs)
	}
	return ""
}

// Stem is the database file name without its extension.
func Stem(db string) string {
	base := filepath.Base(db)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// PrintUsage writes the flag table with examples.
func PrintUsage(w io.Writer) {
	fmt.Fprint(w, `mcp-sqlite-memory: an MCP server that gives an agent one SQLite file, with SQL as its tool.

Usage:
  mcp-sqlite-memory --db PATH [flags]            serve MCP over stdio (what an MCP host runs)
  mcp-sqlite-memory demo [--keep DIR]            a scripted session against a sample database
  mcp-sqlite-memory sample-db PATH               write the sample shop database
  mcp-sqlite-memory call --db PATH TOOL 'JSON'   run one tool call through the real path
  mcp-sqlite-memory verify --db PATH             check the memory chain offline (exit 1 if broken)
  mcp-sqlite-memory export --db PATH [--out F]   write the memory as JSON Lines (verify --jsonl F checks it)
  mcp-sqlite-memory import --db NEW FILE         build a new memory from an export, verifying it
  mcp-sqlite-memory restore --db PATH SNAPSHOT   copy a snapshot back while no server holds the file
  mcp-sqlite-memory ui --db PATH [--addr A]      the person's read-only web view on a loopback address
  mcp-sqlite-memory eval --scripted              the analytics tasks, scripted (a model: mcp-sqlite-memory-eval)
  mcp-sqlite-memory worker                       run one worker request from stdin (for fuzzing)
  mcp-sqlite-memory token add NAME --auth-tokens F  an agent's bearer token for --http (--scopes; also list, scopes NAME LIST, revoke NAME)
  mcp-sqlite-memory version                      print the version (also --version)
  mcp-sqlite-memory help SUBCOMMAND              a subcommand's flags and examples (also SUBCOMMAND --help)

Examples:
  mcp-sqlite-memory --db ~/.local/share/agent/memory.db
  mcp-sqlite-memory --profile readonly --db shop.db --query-timeout 5
  mcp-sqlite-memory call --db memory.db read_query '{"query":"SELECT 1"}'

Flags (each also read from its environment variable; flags win):
`)
	for _, o := range options() {
		name := "--" + o.flag
		if o.flag == "verbose" {
			name = "-v, --verbose"
		}
		def := ""
		if o.def != "" && o.def != "false" {
			def = " (default " + o.def + ")"
		}
		fmt.Fprintf(w, "  %-22s %s%s [%s]\n", name, o.help, def, strings.Join(o.env, ", "))
	}
}
