package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/scopes"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
)

const tokenUsage = "Try: mcp-sqlite-memory token add NAME [--scopes memory:read,...] --auth-tokens FILE   (or token list, token scopes NAME LIST, token revoke NAME)"

// tokenCmd is `token add|list|scopes|revoke`: the agents' tokens of --http.
func tokenCmd(_ context.Context, args []string, env Env) error {
	path := env.Getenv("MCP_SQLITE_AUTH_TOKENS")
	var rest []string
	scopeList, scopesGiven := "", false // --scopes of add; without it all three
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		if name != "auth-tokens" && name != "scopes" {
			return &config.UsageError{Msg: fmt.Sprintf("unknown flag %s for token\n%s", a, tokenUsage)}
		}
		if !hasValue {
			if i+1 == len(args) {
				return &config.UsageError{Msg: "--" + name + " needs a value\n" + tokenUsage}
			}
			i++
			value = args[i]
		}
		if name == "scopes" {
			scopeList, scopesGiven = value, true
			continue
		}
		path = value
	}
	if len(rest) == 0 {
		return &config.UsageError{Msg: "token needs add, list or revoke\n" + tokenUsage}
	}
	if path == "" {
		return &config.UsageError{Msg: "token needs --auth-tokens FILE (or MCP_SQLITE_AUTH_TOKENS)\n" + tokenUsage}
	}
	verb, rest := rest[0], rest[1:]
	if scopesGiven && verb != "add" {
		return &config.UsageError{Msg: "--scopes goes with token add; to change a token's scopes: mcp-sqlite-memory token scopes NAME LIST --auth-tokens " + path}
	}
	switch verb {
	case "add", "revoke":
		if len(rest) != 1 {
			return &config.UsageError{Msg: fmt.Sprintf("token %s takes one agent name\nTry: mcp-sqlite-memory token %s alice --auth-tokens %s", verb, verb, path)}
		}
		if strings.HasPrefix(rest[0], "oauth:") {
			return &config.UsageError{Msg: fmt.Sprintf("agent name %q starts with oauth:, which marks the agents of OAuth access tokens (--oauth-issuer); a static token's agent cannot pass for one\nTry: mcp-sqlite-memory token %s %s --auth-tokens %s", rest[0], verb, strings.TrimPrefix(rest[0], "oauth:"), path)}
		}
		if err := tokens.CheckName(rest[0]); err != nil {
			return &config.UsageError{Msg: err.Error() + "\nTry: mcp-sqlite-memory token " + verb + " alice --auth-tokens " + path}
		}
		if verb == "revoke" {
			found, err := tokens.Revoke(path, rest[0])
			if err != nil {
				return err
			}
			if !found {
				return &exitError{status: exitFailed, msg: fmt.Sprintf("no token for agent %q in %s (see: mcp-sqlite-memory token list --auth-tokens %s)", rest[0], path, path)}
			}
			fmt.Fprintf(env.Stdout, "revoked the token of agent %s; a running server refuses it from its next request\n", rest[0])
			return nil
		}
		granted := scopes.All
		if scopesGiven {
			var err error
			if granted, err = scopes.Parse(scopeList); err != nil {
				return &config.UsageError{Msg: "--scopes: " + err.Error() + "\nTry: --scopes memory:read,memory:write"}
			}
		}
		tok, err := tokens.AddScoped(path, rest[0], granted, time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "token for agent %s (scopes %s) added to %s (only its SHA-256 is kept; this is the one time it is shown).\nClients send it as the header  Authorization: Bearer <token>\n%s\n", rest[0], strings.Join(granted, ","), path, tok)
		return nil
	case "scopes":
		if len(rest) != 2 {
			return &config.UsageError{Msg: "token scopes takes an agent name and a list of scopes\nTry: mcp-sqlite-memory token scopes alice memory:read,memory:write --auth-tokens " + path}
		}
		granted, err := scopes.Parse(rest[1])
		if err != nil {
			return &config.UsageError{Msg: err.Error() + "\nTry: mcp-sqlite-memory token scopes " + rest[0] + " memory:read,memory:write --auth-tokens " + path}
		}
		found, err := tokens.SetScopes(path, rest[0], granted)
		if err != nil {
			return err
		}
		if !found {
			return &exitError{status: exitFailed, msg: fmt.Sprintf("no token for agent %q in %s (see: mcp-sqlite-memory token list --auth-tokens %s)", rest[0], path, path)}
		}
		fmt.Fprintf(env.Stdout, "agent %s may now use the scopes %s; a running server applies them from its next request\n", rest[0], strings.Join(granted, ","))
		return nil
	case "list":
		if len(rest) != 0 {
			return &config.UsageError{Msg: "token list takes no argument\nTry: mcp-sqlite-memory token list --auth-tokens " + path}
		}
		entries, err := tokens.List(path)
		if err != nil {
			return err
		}
		// One line a token, starting with its name: scripts read it with
		// cut or awk.
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		for _, e := range entries {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, strings.Join(e.Scopes, ","), e.Created.UTC().Format(time.RFC3339))
		}
		return tw.Flush()
	}
	return &config.UsageError{Msg: fmt.Sprintf("unknown token command %q\n%s", verb, tokenUsage)}
}

// tokenHelp is token's --help.
func tokenHelp() help {
	return help{
		usage: "token add NAME [--scopes LIST] | list | scopes NAME LIST | revoke NAME --auth-tokens FILE",
		about: `Manages the agents' bearer tokens of --http (docs/http.md). add makes a
random 256-bit token for agent NAME, stores only its SHA-256 with the name
and the time, and prints the token once, as the last line. The file is
created 0600. A running server re-reads the file when it changes: a revoked
token stops working at once. NAME is what the audit log and the memory
chain record for that agent's calls. Scopes say what a token may do:
memory:read (the read tools and the view), memory:write (write_query,
create_view, append_event, checkpoint, snapshot), memory:destructive
(destructive_query); none implies another. add gives all three unless
--scopes says otherwise; scopes NAME LIST changes them. list prints one
line a token: name, scopes, creation time.`,
		flags: [][2]string{{"--auth-tokens FILE", "the token file (also MCP_SQLITE_AUTH_TOKENS)"},
			{"--scopes LIST", "add: the token's scopes, comma-separated (default: memory:read,memory:write,memory:destructive)"}},
		examples: []string{
			"mcp-sqlite-memory token add alice --auth-tokens /etc/mcp-sqlite-memory/tokens",
			"mcp-sqlite-memory token add reviewer --scopes memory:read --auth-tokens /etc/mcp-sqlite-memory/tokens",
			"mcp-sqlite-memory token scopes reviewer memory:read,memory:write --auth-tokens /etc/mcp-sqlite-memory/tokens",
			"mcp-sqlite-memory token list --auth-tokens /etc/mcp-sqlite-memory/tokens",
			"mcp-sqlite-memory token revoke alice --auth-tokens /etc/mcp-sqlite-memory/tokens",
		},
	}
}

func init() { subcommands["token"] = tokenHelp }
