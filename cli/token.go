package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
)

const tokenUsage = "Try: mcp-sqlite-memory token add NAME --auth-tokens FILE   (or token list, token revoke NAME)"

// tokenCmd is `token add|list|revoke`: the agents' tokens of --http.
func tokenCmd(_ context.Context, args []string, env Env) error {
	path := env.Getenv("MCP_SQLITE_AUTH_TOKENS")
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		if name != "auth-tokens" {
			return &config.UsageError{Msg: fmt.Sprintf("unknown flag %s for token\n%s", a, tokenUsage)}
		}
		if !hasValue {
			if i+1 == len(args) {
				return &config.UsageError{Msg: "--auth-tokens needs a file\n" + tokenUsage}
			}
			i++
			value = args[i]
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
	switch verb {
	case "add", "revoke":
		if len(rest) != 1 {
			return &config.UsageError{Msg: fmt.Sprintf("token %s takes one agent name\nTry: mcp-sqlite-memory token %s alice --auth-tokens %s", verb, verb, path)}
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
		tok, err := tokens.Add(path, rest[0], time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "token for agent %s added to %s (only its SHA-256 is kept; this is the one time it is shown).\nClients send it as the header  Authorization: Bearer <token>\n%s\n", rest[0], path, tok)
		return nil
	case "list":
		if len(rest) != 0 {
			return &config.UsageError{Msg: "token list takes no argument\nTry: mcp-sqlite-memory token list --auth-tokens " + path}
		}
		entries, err := tokens.List(path)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "agent\tcreated")
		for _, e := range entries {
			fmt.Fprintf(tw, "%s\t%s\n", e.Name, e.Created.UTC().Format(time.RFC3339))
		}
		return tw.Flush()
	}
	return &config.UsageError{Msg: fmt.Sprintf("unknown token command %q\n%s", verb, tokenUsage)}
}

// tokenHelp is token's --help.
func tokenHelp() help {
	return help{
		usage: "token add NAME | list | revoke NAME --auth-tokens FILE",
		about: `Manages the agents' bearer tokens of --http (docs/http.md). add makes a
random 256-bit token for agent NAME, stores only its SHA-256 with the name
and the time, and prints the token once, as the last line. The file is
created 0600. A running server re-reads the file when it changes: a revoked
token stops working at once. NAME is what the audit log and the memory
chain record for that agent's calls.`,
		flags: [][2]string{{"--auth-tokens FILE", "the token file (also MCP_SQLITE_AUTH_TOKENS)"}},
		examples: []string{
			"mcp-sqlite-memory token add alice --auth-tokens /etc/mcp-sqlite-memory/tokens",
			"mcp-sqlite-memory token list --auth-tokens /etc/mcp-sqlite-memory/tokens",
			"mcp-sqlite-memory token revoke alice --auth-tokens /etc/mcp-sqlite-memory/tokens",
		},
	}
}

func init() { subcommands["token"] = tokenHelp }
