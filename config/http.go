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
	// MaxSessionsPerAgent is one agent's share of MaxSessions; 0 until
	// check: then MaxSessions/8, at least 1.
	MaxSessionsPerAgent int
	SessionIdle         time.Duration
	BodyTimeout         time.Duration
	MaxBodyMB           int
	HeaderTimeout       time.Duration
	ShutdownGrace       time.Duration
	// OAuth 2.1 resource server (SPEC 11.2): the authorization server's
	// issuer, this server's canonical URL, the file with the client
	// credentials for introspection, how long an introspection answer is
	// reused, and the claim that names the agent.
	OAuthIssuer           string
	Resource              string
	OAuthIntrospectSecret string
	OAuthCache            time.Duration
	OAuthAgentClaim       string
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
	if c.MaxSessionsPerAgent == 0 {
		c.MaxSessionsPerAgent = max(1, c.MaxSessions/8)
	}
	if c.HTTP == "" {
		return nil
	}
	if c.MaxSessionsPerAgent > c.MaxSessions {
		return &UsageError{fmt.Sprintf("--max-sessions-per-agent %d is more than --max-sessions %d\nTry: --max-sessions-per-agent %d", c.MaxSessionsPerAgent, c.MaxSessions, c.MaxSessions)}
	}
	host, port, err := net.SplitHostPort(c.HTTP)
	if err != nil || port == "" {
		return &UsageError{fmt.Sprintf("--http %q must be host:port\nTry: --http 127.0.0.1:8765", c.HTTP)}
	}
	if c.OAuthIssuer != "" && c.Resource == "" {
		return &UsageError{"--oauth-issuer needs --resource URL: this server's canonical URL, which its access tokens must name as their audience (RFC 8707)\nTry: --resource https://memory.example.com/mcp"}
	}
	if c.Resource != "" && c.OAuthIssuer == "" {
		return &UsageError{"--resource goes with --oauth-issuer URL (the authorization server that issues this server's tokens)"}
	}
	if c.OAuthIntrospectSecret != "" && c.OAuthIssuer == "" {
		return &UsageError{"--oauth-introspection-secret goes with --oauth-issuer URL"}
	}
	if c.AuthTokens == "" && c.OAuthIssuer == "" {
		return &UsageError{"--http needs --auth-tokens FILE or --oauth-issuer URL: every agent authenticates with a token of its own\nTry: " + fmt.Sprintf(tokenHint, c.HTTP)}
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
