//go:build !linux

package tests

// rssProbeEnv: the probe of import_bounds_linux_test.go; elsewhere no
// test runs it.
const rssProbeEnv = "MCP_SQLITE_E2E_RSS_PROBE"

func runRSSProbe([]string) int { return 125 }
