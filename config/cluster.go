package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// ClusterConfig is cluster mode's settings (SPEC 13, docs/cluster.md):
// the memory lives in an rqlite cluster instead of one file.
type ClusterConfig struct {
	// RQLite are the cluster's node addresses (base URLs); empty: the
	// memory is the --db file.
	RQLite []string
	// RQLiteData is the data directory of the node beside this front,
	// whose SQLite file (db.sqlite) the workers read, read-only.
	RQLiteData string
}

// Clustered reports whether the memory lives in an rqlite cluster.
func (c *Config) Clustered() bool { return len(c.RQLite) > 0 }

// NodeFile is the SQLite file of the node beside this front: rqlite v8
// keeps its database at DATADIR/db.sqlite.
func (c *Config) NodeFile() string { return filepath.Join(c.RQLiteData, "db.sqlite") }

func clusterOptions() []option {
	return []option{
		listOption("rqlite", "MCP_SQLITE_RQLITE", "keep the memory in an rqlite cluster reached at these node URLs, comma-separated (http://host:4001); --db is then not used; see --rqlite-data (docs/cluster.md)", func(c *Config, l []string) { c.RQLite = l }),
		stringOption("rqlite-data", []string{"MCP_SQLITE_RQLITE_DATA"}, "", "with --rqlite: the data directory of the rqlite node beside this front; workers read its db.sqlite read-only (without it, reads go through the cluster's API: docs/cluster.md)", func(c *Config, v string) { c.RQLiteData = strings.TrimSpace(v) }),
	}
}

// checkCluster refuses the settings cluster mode cannot honour, each with
// the line to type instead.
func (c *Config) checkCluster() error {
	if !c.Clustered() {
		if c.RQLiteData != "" {
			return &UsageError{"--rqlite-data is for cluster mode\nTry: --rqlite http://127.0.0.1:4001 --rqlite-data " + c.RQLiteData + ", or drop --rqlite-data"}
		}
		return nil
	}
	for i, u := range c.RQLite {
		norm, err := NodeURL(u)
		if err != nil {
			return &UsageError{fmt.Sprintf("--rqlite: %v\nTry: --rqlite http://127.0.0.1:4001,http://127.0.0.1:4011", err)}
		}
		c.RQLite[i] = norm
	}
	switch {
	case c.Profile == ProfileReadonly:
		return &UsageError{"--rqlite is for the memory profile\nTry: drop --profile readonly, or point --db at a copy (mcp-sqlite-memory export --rqlite URL)"}
	case c.DB != "":
		return &UsageError{"--db and --rqlite both given: in cluster mode the memory is in the cluster, not in a file\nTry: drop --db (and MCP_SQLITE_DB), or drop --rqlite"}
	case c.Replicate != "":
		return &UsageError{"--replicate copies one file with Litestream; in cluster mode rqlite keeps the copies\nTry: drop --replicate"}
	case c.RQLiteData == "":
		// No node beside this front: the one-shot commands (verify,
		// export, import --rqlite) and a front without a local node
		// (docs/cluster.md) read through the cluster's API.
		return nil
	}
	abs, err := filepath.Abs(c.RQLiteData)
	if err != nil {
		return &UsageError{fmt.Sprintf("--rqlite-data %s: %v", c.RQLiteData, err)}
	}
	c.RQLiteData = abs
	if c.SnapshotDir == "" {
		c.SnapshotDir = abs + ".snapshots"
	}
	return nil
}

// NodeURL normalises one rqlite node address: host:port gets http://; a
// path, query or user part is refused.
func NodeURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("node address %q: %v", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("node address %q: the scheme must be http or https", s)
	case u.Host == "" || u.Port() == "":
		return "", fmt.Errorf("node address %q needs a host and a port", s)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("node address %q: give scheme://host:port only", s)
	}
	return u.Scheme + "://" + u.Host, nil
}
