package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HTTPConfig is the settings of --http (SPEC 8 and 11).
type HTTPConfig struct {
	HTTP             string // listen address; "" serves stdio
	AuthTokens       string
	AllowedOrigins   []string
	AllowedHosts     []string
	MaxCallsPerAgent int // 0 until check: then --max-workers
	// MaxQueuedPerAgent calls of one agent wait in line beyond
	// MaxCallsPerAgent, each at most QueueWait.
	MaxQueuedPerAgent int
	QueueWait         time.Duration
	TLSCert, TLSKey   string
	MaxConnections    int
	MaxSessions       int
	MaxBodyMB         int
	HeaderTimeout     time.Duration
	ShutdownGrace     time.Duration
}

func listOption(flagName, env, help string, set func(*Config, []string)) option {
	return option{flag: flagName, env: []string{env}, help: help, apply: func(c *Config, v string) error {
		var l []string
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				l = append(l, item)
			}
		}
		set(c, l)
		return nil
	}}
}

func secondsOption(flagName, env, def, help string, set func(*Config, time.Duration)) option {
	return option{flag: flagName, env: []string{env}, def: def, help: help, apply: func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0.1 || f > 3600 || math.IsNaN(f) {
			return errors.New("must be a number of seconds from 0.1 to 3600")
		}
		set(c, time.Duration(f*float64(time.Second)))
		return nil
	}}
}

const tokenHint = "make a token first: mcp-sqlite-memory token add NAME --auth-tokens FILE, then start with --http %s --auth-tokens FILE"

// checkHTTP checks the --http settings and fills their defaults.
func (c *Config) checkHTTP() error {
	if c.MaxCallsPerAgent == 0 {
		c.MaxCallsPerAgent = c.MaxWorkers
	}
	if c.HTTP == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(c.HTTP)
	if err != nil || port == "" {
		return &UsageError{fmt.Sprintf("--http %q must be host:port\nTry: --http 127.0.0.1:8765", c.HTTP)}
	}
	if c.AuthTokens == "" {
		return &UsageError{"--http needs --auth-tokens FILE: every agent authenticates with a token of its own\nTry: " + fmt.Sprintf(tokenHint, c.HTTP)}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return &UsageError{"--tls-cert and --tls-key go together\nTry: --tls-cert cert.pem --tls-key key.pem"}
	}
	for _, o := range c.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return &UsageError{fmt.Sprintf("--allowed-origins %q is not an origin (scheme://host[:port])\nTry: --allowed-origins https://ide.example.com", o)}
		}
	}
	if len(c.AllowedHosts) == 0 {
		ip := net.ParseIP(host)
		if host == "" || (ip != nil && ip.IsUnspecified()) {
			return &UsageError{fmt.Sprintf("--http %s listens on every address, so the server cannot tell which Host names are its own; name them\nTry: --allowed-hosts memory.example.com (or --http 127.0.0.1:%s)", c.HTTP, port)}
		}
		c.AllowedHosts = []string{host}
		if host == "localhost" || (ip != nil && ip.IsLoopback()) {
			for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
				if h != host {
					c.AllowedHosts = append(c.AllowedHosts, h)
				}
			}
		}
	}
	return nil
}
