package config

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestClusterFlags(t *testing.T) {
	data, _ := filepath.Abs("node1")
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(*Config) bool
		err   string
	}{
		{"cluster", []string{"--rqlite", "127.0.0.1:4001, http://h2:4011/", "--rqlite-data", "node1"}, nil, func(c *Config) bool {
			return c.Clustered() && strings.Join(c.RQLite, " ") == "http://127.0.0.1:4001 http://h2:4011" &&
				c.RQLiteData == data && c.NodeFile() == filepath.Join(data, "db.sqlite") && c.SnapshotDir == data+".snapshots" && c.RequireDB() == nil
		}, ""},
		{"from env", nil, map[string]string{"MCP_SQLITE_RQLITE": "https://n1:4001", "MCP_SQLITE_RQLITE_DATA": "node1"}, func(c *Config) bool {
			return c.RQLite[0] == "https://n1:4001" && c.RQLiteData == data
		}, ""},
		{"not clustered", []string{"--db", "m.db"}, nil, func(c *Config) bool { return !c.Clustered() }, ""},
		{"data without cluster", []string{"--rqlite-data", "node1"}, nil, nil, "--rqlite-data is for cluster mode"},
		{"no data dir", []string{"--rqlite", "127.0.0.1:4001"}, nil, func(c *Config) bool {
			return c.Clustered() && c.RQLiteData == "" && c.SnapshotDir == ""
		}, ""},
		{"db too", []string{"--rqlite", "127.0.0.1:4001", "--rqlite-data", "n", "--db", "m.db"}, nil, nil, "--db and --rqlite both given"},
		{"db from env too", []string{"--rqlite", "127.0.0.1:4001", "--rqlite-data", "n"}, map[string]string{"MCP_SQLITE_DB": "m.db"}, nil, "drop --db (and MCP_SQLITE_DB)"},
		{"readonly", []string{"--rqlite", "127.0.0.1:4001", "--rqlite-data", "n", "--profile", "readonly"}, nil, nil, "--rqlite is for the memory profile"},
		{"litestream", []string{"--rqlite", "127.0.0.1:4001", "--rqlite-data", "n", "--replicate", "l.yml"}, nil, nil, "drop --replicate"},
		{"no port", []string{"--rqlite", "http://h1", "--rqlite-data", "n"}, nil, nil, "needs a host and a port"},
		{"a path", []string{"--rqlite", "http://h1:4001/db", "--rqlite-data", "n"}, nil, nil, "scheme://host:port only"},
		{"other scheme", []string{"--rqlite", "ftp://h1:4001", "--rqlite-data", "n"}, nil, nil, "must be http or https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Parse(tt.args, env(tt.env), io.Discard)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Fatalf("config %+v", c.ClusterConfig)
			}
		})
	}
}
