package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(*Config) bool
		err   string
	}{
		{"defaults", []string{"--db", "m.db"}, nil, func(c *Config) bool {
			return c.DB == "m.db" && c.Profile == "memory" && c.QueryTimeout == 10*time.Second && c.DefaultLimit == 100 &&
				c.MaxRows == 1000 && c.MaxResultBytes == 32768 && c.MaxCellChars == 2000 && c.MaxUpdateRows == 500 &&
				c.SearchCandidates == 5000 && c.Snapshots == 5 && c.WorkerMemoryMB == 256 && c.MaxGrowthMB == 512 &&
				c.MaxWorkers == 4 && c.StandbyWorkers == 4 && c.Sandbox && !c.Verbose && c.SnapshotDir == "m.snapshots" &&
				c.Confirm == "destructive" && c.ConfirmTimeout == 120*time.Second
		}, ""},
		{"confirm", []string{"--confirm", "writes", "--confirm-timeout", "2.5"}, nil, func(c *Config) bool {
			return c.Confirm == "writes" && c.ConfirmTimeout == 2500*time.Millisecond
		}, ""},
		{"confirm from env", nil, map[string]string{"MCP_SQLITE_CONFIRM": "required", "MCP_SQLITE_CONFIRM_TIMEOUT": "5"}, func(c *Config) bool {
			return c.Confirm == "required" && c.ConfirmTimeout == 5*time.Second
		}, ""},
		{"bad confirm", []string{"--confirm", "always"}, nil, nil, "must be destructive, writes, required or off"},
		{"bad confirm timeout", []string{"--confirm-timeout", "0"}, nil, nil, "from 0.1 to 86400"},
		{"env", nil, map[string]string{"MCP_SQLITE_DB": "/x/e.db", "MCP_SQLITE_MAX_ROWS": "50", "MCP_SQLITE_DEFAULT_LIMIT": "20"}, func(c *Config) bool {
			return c.DB == "/x/e.db" && c.MaxRows == 50 && c.DefaultLimit == 20 && c.SnapshotDir == "/x/e.snapshots"
		}, ""},
		{"DATABASE_PATH", nil, map[string]string{"DATABASE_PATH": "d.db"}, func(c *Config) bool { return c.DB == "d.db" }, ""},
		{"MCP_SQLITE_DB wins over DATABASE_PATH", nil, map[string]string{"DATABASE_PATH": "d.db", "MCP_SQLITE_DB": "m.db"}, func(c *Config) bool { return c.DB == "m.db" }, ""},
		{"flag beats env", []string{"--max-rows", "7", "--default-limit", "7"}, map[string]string{"MCP_SQLITE_MAX_ROWS": "50"}, func(c *Config) bool { return c.MaxRows == 7 }, ""},
		{"readonly default db", []string{"--profile", "readonly"}, nil, func(c *Config) bool { return c.DB == "shop.db" }, ""},
		{"fractional timeout", []string{"--query-timeout", "0.5"}, nil, func(c *Config) bool { return c.QueryTimeout == 500*time.Millisecond }, ""},
		{"verbose short", []string{"-v"}, nil, func(c *Config) bool { return c.Verbose }, ""},
		{"sandbox off", []string{"--sandbox", "off"}, nil, func(c *Config) bool { return !c.Sandbox }, ""},
		{"single dash", []string{"-db", "s.db"}, nil, func(c *Config) bool { return c.DB == "s.db" }, ""},
		{"bad int", []string{"--max-rows", "lots"}, nil, nil, `invalid value "lots" for --max-rows: must be a whole number from 1 to 1000000`},
		{"bad int says what to type", []string{"--max-rows", "0"}, nil, nil, "Try: --max-rows 1000"},
		{"bad env", nil, map[string]string{"MCP_SQLITE_SNAPSHOTS": "-1"}, nil, "environment variable MCP_SQLITE_SNAPSHOTS"},
		{"bad profile", []string{"--profile", "admin"}, nil, nil, "must be memory or readonly"},
		{"bad sandbox", []string{"--sandbox", "maybe"}, nil, nil, "must be on or off"},
		{"too little memory", []string{"--worker-memory-mb", "64"}, nil, nil, "from 128"},
		{"zero timeout", []string{"--query-timeout", "0"}, nil, nil, "from 0.1 to 3600"},
		{"unknown flag", []string{"--dbb", "x"}, nil, nil, "unknown flag --dbb; did you mean --db?"},
		{"limit above max", []string{"--default-limit", "2000"}, nil, nil, "--default-limit 2000 is larger than --max-rows 1000"},
		{"standby above max", []string{"--standby-workers", "5", "--max-workers", "2"}, nil, nil, "--standby-workers 5 is larger than --max-workers 2"},
		{"standby follows a smaller max", []string{"--max-workers", "2"}, nil, func(c *Config) bool { return c.MaxWorkers == 2 && c.StandbyWorkers == 2 }, ""},
		{"standby auto stops at 4", []string{"--max-workers", "16"}, nil, func(c *Config) bool { return c.StandbyWorkers == 4 }, ""},
		{"embedding model", []string{"--embedding-model", "m"}, nil, func(c *Config) bool { return c.EmbeddingModel == "m" }, ""},
		{"embedding model from env", nil, map[string]string{"MCP_SQLITE_EMBEDDING_MODEL": "m"}, func(c *Config) bool { return c.EmbeddingModel == "m" }, ""},
		{"embedding model in readonly", []string{"--profile", "readonly", "--embedding-model", "m"}, nil, nil, "--embedding-model is for the memory profile"},
		{"standby explicit", []string{"--standby-workers", "0"}, nil, func(c *Config) bool { return c.StandbyWorkers == 0 }, ""},
		{"standby auto from env", nil, map[string]string{"MCP_SQLITE_STANDBY_WORKERS": "auto", "MCP_SQLITE_MAX_WORKERS": "3"}, func(c *Config) bool { return c.StandbyWorkers == 3 }, ""},
		{"bad standby", []string{"--standby-workers", "many"}, nil, nil, "must be auto or a whole number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Parse(tt.args, env(tt.env), io.Discard)
			if tt.err != "" {
				if _, ok := err.(*UsageError); !ok || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want a usage error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Fatalf("config %+v", c)
			}
		})
	}
}

func TestRequireDB(t *testing.T) {
	c, _, err := Parse(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RequireDB(); err == nil || !strings.Contains(err.Error(), "Try: mcp-sqlite-memory --db") {
		t.Fatalf("got %v", err)
	}
}

func TestUsageMentionsEveryFlag(t *testing.T) {
	var b strings.Builder
	PrintUsage(&b)
	for _, o := range options() {
		if !strings.Contains(b.String(), "--"+o.flag) {
			t.Errorf("usage lacks --%s", o.flag)
		}
	}
}

func TestPathWarning(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "memory.db")
	cwd, _ := os.Getwd()
	for _, tc := range []struct {
		name, db string
		want     []string // all in the warning; none: no warning
	}{
		{"absolute", abs, nil},
		{"relative", "memory.db", []string{"is relative", filepath.Join(cwd, "memory.db"), "--db " + filepath.Join(cwd, "memory.db")}},
		{"dot relative", "./data/m.db", []string{"is relative", filepath.Join(cwd, "data", "m.db")}},
		{"literal tilde", "~/agent/memory.db", []string{`literal "~"`, filepath.Join(cwd, "~", "agent", "memory.db"), `folder named "~"`, "Write the path in full"}},
		{"tilde user", "~bob/m.db", []string{`literal "~"`, "the absolute path"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PathWarning(tc.db)
			if len(tc.want) == 0 {
				if got != "" {
					t.Fatalf("PathWarning(%q) = %q, want none", tc.db, got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("PathWarning(%q) = %q, want it to contain %q", tc.db, got, w)
				}
			}
		})
	}
}
