package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/version"
)

// help is one subcommand's --help. Every subcommand prints the same
// layout: a usage line, what it does, its flags, examples.
type help struct {
	usage    string      // after "Usage: mcp-sqlite-memory "
	about    string      // what it does, wrapped by hand
	flags    [][2]string // "--keep DIR", "what it means"
	examples []string
}

// serverFlagsNote closes the flag list of the commands that take every
// server flag.
var serverFlagsNote = [2]string{"(any server flag)", "see mcp-sqlite-memory --help"}

// subcommands, in the order the top-level help lists them. eval's flags are
// read from its flag set, so they cannot drift from what it accepts.
var subcommands = map[string]func() help{
	"demo": func() help {
		return help{
			usage: "demo [--keep DIR]",
			about: `Writes the sample shop database, starts this binary as a real stdio MCP
server and walks a scripted session through it, printing every call.`,
			flags:    [][2]string{{"--keep DIR", "write the database into DIR and keep it (default: a temporary folder)"}},
			examples: []string{"mcp-sqlite-memory demo --keep ./demo && mcp-sqlite-memory verify --db ./demo/shop.db"},
		}
	},
	"sample-db": func() help {
		return help{
			usage: "sample-db PATH",
			about: `Writes the deterministic sample shop database (customers, products, orders,
order_items; 2024-2025) to PATH; refuses to overwrite a non-empty file.`,
			examples: []string{"mcp-sqlite-memory sample-db ./shop.db"},
		}
	},
	"call": func() help {
		return help{
			usage: `call --db PATH | --rqlite URL[,URL] [--rqlite-data DIR] [flags] TOOL ['{"arg":...}']`,
			about: `Runs one tool call through the real path (worker, policy, audit) and prints
its text; exit 1 when the tool answers an error. Logs warnings only, unless -v.`,
			flags: [][2]string{
				{"--db PATH", "the database (created if missing, as the server does, and said on stderr)"},
				{"--rqlite URL[,URL]", "instead of --db: a front in cluster mode in this process (docs/cluster.md)"},
				{"--rqlite-data DIR", "with --rqlite: the data directory of the node beside it"},
				{"--must-exist", "refuse (exit 2) a --db that does not exist yet: a setup check"},
				{"-v, --verbose", "debug logs on stderr"},
				serverFlagsNote,
			},
			examples: []string{
				`mcp-sqlite-memory call --db memory.db read_query '{"query":"SELECT count(*) FROM query_log"}'`,
				`mcp-sqlite-memory call --db memory.db append_event '{"content":"switched to WAL","kind":"decision"}'`,
				`mcp-sqlite-memory call --must-exist --db /home/me/.local/share/agent-memory/memory.db get_resume_context '{}'`,
				`mcp-sqlite-memory call --rqlite http://127.0.0.1:4001 --rqlite-data ./rqlite-data/n1 verify_chain '{}'`,
			},
		}
	},
	"verify": func() help {
		return help{
			usage: "verify --db PATH | verify --jsonl FILE | verify --rqlite URL[,URL]",
			about: `Checks the memory chain offline and prints the verify_chain JSON: of a
database, of an export written by "export", or of a copy of an rqlite
cluster's database (its backup, in a private temporary folder; the same
answers).
Exit 0: intact; 1: broken; 2: not a usable memory database or export.`,
			flags: [][2]string{
				{"--db PATH", "the memory database"},
				{"--jsonl FILE", "an export instead (- reads stdin)"},
				{"--rqlite URL[,URL]", "a cluster's memory instead (any of its nodes)"},
				{"-v, --verbose", "debug logs on stderr"},
			},
			examples: []string{
				"mcp-sqlite-memory verify --db ~/.local/share/agent-memory/memory.db",
				"mcp-sqlite-memory verify --jsonl memory.jsonl",
				"mcp-sqlite-memory verify --rqlite http://127.0.0.1:4001,http://127.0.0.1:4011",
			},
		}
	},
	"export": func() help {
		return help{
			usage: "export --db PATH | --rqlite URL[,URL] [--out FILE]",
			about: `Writes every memory event and checkpoint as JSON Lines, one object a line
with every column, the hash included: events in id order, each checkpoint
after the event it is anchored to. The same rows always give the same bytes.
Reads one snapshot while servers go on appending; on stderr, a progress line
a second for long chains. Agent tables and the audit log are not exported.
With --rqlite, the memory of a cluster: a copy of its whole database
(its backup) in a private temporary folder, removed afterwards.`,
			flags: [][2]string{
				{"--db PATH", "the memory database (opened read-only)"},
				{"--rqlite URL[,URL]", "a cluster's memory instead (any of its nodes)"},
				{"--out FILE", "write FILE, complete or not at all (default: stdout)"},
				{"-v, --verbose", "debug logs on stderr"},
			},
			examples: []string{
				"mcp-sqlite-memory export --db memory.db --out memory.jsonl",
				"mcp-sqlite-memory export --db memory.db | gzip > memory.jsonl.gz",
				`mcp-sqlite-memory export --db memory.db | jq -r 'select(.type=="event" and .kind=="decision") | .content'`,
				"mcp-sqlite-memory export --rqlite http://127.0.0.1:4001 --out memory.jsonl",
			},
		}
	},
	"import": func() help {
		return help{
			usage: "import --db NEW FILE | import --rqlite URL[,URL] FILE",
			about: `Builds the memory of NEW (created if missing) from an export: every row
with its own id, time, session and hash, verified while read, in one
transaction, with the full-text index. Refuses a NEW that already holds
events or checkpoints (exit 2), and any line that breaks the chain or is no
export line, saying which and why (exit 1); a refused import writes no row.
FILE - reads stdin. With --rqlite, into a new cluster: the memory is built in
a private temporary file and loaded (rqlite replaces the whole database, on
every node); refused (exit 2) when the cluster holds any agent table, view,
or memory or audit row.`,
			flags: [][2]string{
				{"--db NEW", "the database to build"},
				{"--rqlite URL[,URL]", "an empty cluster instead (any of its nodes)"},
				{"-v, --verbose", "debug logs on stderr"},
			},
			examples: []string{
				"mcp-sqlite-memory import --db new-memory.db memory.jsonl",
				"gunzip -c memory.jsonl.gz | mcp-sqlite-memory import --db new-memory.db -",
				"mcp-sqlite-memory import --rqlite http://127.0.0.1:4001 memory.jsonl",
			},
		}
	},
	"restore": func() help {
		return help{
			usage: "restore --db PATH SNAPSHOT [--reason TEXT] [--everything] [--dry-run] [--force] [--restore-timeout SECONDS] (or --rqlite URL[,URL...] instead of --db)",
			about: `Puts a snapshot (destructive_query's, the snapshot tool's, or a safety
snapshot of an earlier restore) back into the database. The agent's tables,
indexes, views and triggers come back from the snapshot; the memory log,
checkpoints and audit log stay as they are, so the chain only grows. All of
it runs in one SQLite transaction, after a safety snapshot of the current
state (<stem>.<time>Z.pre-restore.db in the snapshot folder, counted by
retention), and the command prints what it changes: tables replaced with
their rows now and in the snapshot, objects added and removed. A memory
event of kind "restore" and an audit row record it.

It refuses, changing nothing, while a server holds the file (stop the MCP
session first) and while another program is in a transaction on it (it names
the program); a program that only has the file open sees the restored
tables from its next transaction on. To undo a restore, restore its safety
snapshot.

An undo record (<stem>.<time>Z.undo.db, what destructive_query keeps of a
large database) puts back only what its statement changed, in one
transaction. If rows it would put back were changed since, it refuses and
names them (table, key, what changed) unless --force. Its safety snapshot is
an undo record of the restore (the rows it puts back, a few KiB), or a full
copy when the record recreates tables or other objects. Several undo records
are restored one by one, newest first.

In cluster mode (--rqlite) it reads the cluster's state (a backup, kept as
the safety snapshot db.<time>Z.pre-restore.db), plans from it, and sends the
whole restore with its memory event and audit row as one rqlite request,
which every node applies as one transaction. Servers may keep running: if
any of them wrote meanwhile, the request fails on every node and restore
says to run it again. Row data above --max-request-mb (64) is refused.`,
			flags: [][2]string{
				{"--db PATH", "the database to restore into (a missing file gets the whole snapshot)"},
				{"--reason TEXT", "why, recorded in the restore event and the audit row"},
				{"--everything", "restore the whole file through SQLite's backup API, memory tables too: discards the events, checkpoints and audit rows newer than the snapshot (and says which)"},
				{"--dry-run", "print what the restore would change and change nothing"},
				{"--force", "an undo record overwrites the rows that were changed since it was taken, instead of refusing"},
				{"--snapshot-dir PATH", "where the safety snapshot goes (default <db dir>/<stem>.snapshots)"},
				{"--restore-timeout SECONDS", "stop and roll back a restore that runs longer (default 600: a snapshot is untrusted input)"},
				{"--max-growth-mb N", "roll back a restore that would add more than N MiB beyond four times the snapshot's size (default 512)"},
				{"--rqlite URL[,URL...]", "restore into this rqlite cluster instead of a file (the snapshot is a front's db.<time>Z.db)"},
				{"--rqlite-data DIR", "with --rqlite: the snapshot folder is DIR.snapshots, as for a front beside that node (default: the snapshot's own folder)"},
				{"--max-request-mb N", "with --rqlite: refuse a snapshot whose agent rows take more than N MiB in the one request (default 64)"},
				{"-v, --verbose", "debug logs on stderr"},
			},
			examples: []string{
				"mcp-sqlite-memory restore --db memory.db --dry-run memory.snapshots/memory.20261130T101500.123Z.db",
				`mcp-sqlite-memory restore --db memory.db --reason "undo the DELETE of notes" memory.snapshots/memory.20261130T101500.123Z.db`,
				"mcp-sqlite-memory restore --db memory.db memory.snapshots/memory.20261130T101800.456Z.pre-restore.db   # undo that restore",
				"mcp-sqlite-memory restore --db memory.db --everything memory.snapshots/memory.20261130T101500.123Z.db",
				"mcp-sqlite-memory restore --db memory.db memory.snapshots/memory.20261130T103000.789Z.undo.db   # newest first, then the older ones",
				"mcp-sqlite-memory restore --rqlite http://10.0.0.1:4001,http://10.0.0.2:4001 /var/lib/rqlite/node1.snapshots/db.20261130T101500.123Z.db",
			},
		}
	},
	"ui": func() help {
		return help{
			usage: "ui --db PATH [--addr 127.0.0.1:0]",
			about: `Serves the person's read-only view of the memory on a loopback address and
prints its URL with a one-time secret, which the first visit trades for a
cookie: the timeline of events and checkpoints (filters, ranked search),
the chain's state and its JSON Lines export, the audit log with a chart of
calls per hour, the snapshots with the restore command of each, and the
agent's tables and views. It reads through SQLite, read-only, and never
changes the file; servers may run on it meanwhile. Stop it with Ctrl-C.
See docs/ui.md.`,
			flags: [][2]string{
				{"--db PATH", "the memory database"},
				{"--addr HOST:PORT", "the loopback address to serve on (default 127.0.0.1:0: a free port)"},
				{"--snapshot-dir PATH", "the snapshot folder to list (default <db dir>/<stem>.snapshots)"},
				{"-v, --verbose", "debug logs on stderr"},
			},
			examples: []string{
				"mcp-sqlite-memory ui --db ~/.local/share/agent-memory/memory.db",
				"mcp-sqlite-memory ui --db memory.db --addr 127.0.0.1:8765",
			},
		}
	},
	"eval": func() help {
		fs, _ := newEvalFlags()
		return help{
			usage: "eval --scripted [flags]",
			about: `Runs the analytics tasks (eval/tasks.json) with their scripted SQL through
this binary started as "--profile readonly" over stdio, checks every answer
against SQLite and prints a report: a test of the server, no model, no key.
Exit status 1 when any task fails. A model's run is a command of its own,
mcp-sqlite-memory-eval (go install ./cmd/mcp-sqlite-memory-eval), which
this server does not link; see docs/readonly.md.`,
			flags: flagRows(fs),
			examples: []string{
				"mcp-sqlite-memory eval --scripted",
				"mcp-sqlite-memory eval --scripted --task revenue_2025,join_latest_orders -v",
			},
		}
	},
	"worker": func() help {
		return help{
			usage: "worker < request.json",
			about: `Runs one worker request (JSON on stdin) and writes one response (a JSON
header line and the raw result) on stdout; see worker/README.md. The server
runs its workers this way; by hand it is for fuzzing and debugging.`,
			examples: []string{`echo '{"v":6,"op":"query","db":"shop.db","mode":"read","sql":"SELECT 1","caps":{"max_rows":10,"max_result_bytes":4096,"max_cell_chars":100,"max_update_rows":1},"limits":{"timeout_ms":5000,"memory_mb":256,"max_growth_mb":1,"sandbox":false}}' | mcp-sqlite-memory worker`},
		}
	},
	"version": func() help {
		return help{
			usage:    "version",
			about:    `Prints the version of this build (also: --version) and its commit: a release's version, else the module version, else the VCS revision (+dirty), else "devel".`,
			examples: []string{"mcp-sqlite-memory version   # the same as: mcp-sqlite-memory --version"},
		}
	},
}

// write prints h in the common layout.
func (h help) write(w io.Writer) {
	fmt.Fprintf(w, "Usage: mcp-sqlite-memory %s\n\n%s\n", h.usage, h.about)
	if len(h.flags) > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
		for _, f := range h.flags {
			fmt.Fprintf(tw, "  %s\t%s\n", f[0], f[1])
		}
		tw.Flush()
	}
	fmt.Fprint(w, "\nExamples:\n")
	for _, e := range h.examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

// flagRows lists a flag set in the help layout: "--name VALUE" and its
// usage with the default, instead of Go's own "-name string" layout.
func flagRows(fs *flag.FlagSet) [][2]string {
	var rows [][2]string
	fs.VisitAll(func(f *flag.Flag) {
		value, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name
		}
		if value != "" && !isBoolFlag(f) {
			name += " " + strings.ToUpper(value)
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			usage += " (default " + f.DefValue + ")"
		}
		rows = append(rows, [2]string{name, usage})
	})
	return rows
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// wantsHelp reports whether args ask for help: -h, -help or --help before
// any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		switch a {
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// wantsVersion reports whether a serve command line asks for the version.
func wantsVersion(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--version" || a == "-version" {
			return true
		}
	}
	return false
}

func printVersion(w io.Writer) {
	fmt.Fprintln(w, version.Line("mcp-sqlite-memory"))
}
