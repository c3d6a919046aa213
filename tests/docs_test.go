package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docCommand is one command line of a shell block in the docs.
type docCommand struct {
	where string // file:line
	words []string
}

// fencedBlockRE matches a fenced block: its language and its body.
var fencedBlockRE = regexp.MustCompile("(?ms)^```(\\w*)\n(.*?)^```")

// shellLanguages are the blocks that hold commands: shell, or untagged
// (the usage synopsis).
var shellLanguages = []string{"sh", "bash", "shell", "console", ""}

// docCommands returns the lines of the shell blocks of README.md and
// docs/*.md that run mcp-sqlite-memory, mcp-sqlite-memory-eval or go, cut before a comment or a
// column of description (two spaces or more).
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../README.md"}, files...)
	var out []docCommand
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for _, m := range fencedBlockRE.FindAllStringSubmatchIndex(text, -1) {
			if !slices.Contains(shellLanguages, text[m[2]:m[3]]) {
				continue
			}
			body := text[m[4]:m[5]]
			first := strings.Count(text[:m[4]], "\n") + 1
			for i, line := range strings.Split(body, "\n") {
				line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
				if !strings.HasPrefix(line, "mcp-sqlite-memory ") && !strings.HasPrefix(line, "mcp-sqlite-memory-eval ") && !strings.HasPrefix(line, "go ") {
					continue
				}
				if at := regexp.MustCompile(`\s{2,}|\s#`).FindStringIndex(line); at != nil {
					line = line[:at[0]]
				}
				out = append(out, docCommand{where: filepath.Base(f) + ":" + strconv.Itoa(first+i), words: strings.Fields(line)})
			}
		}
	}
	return out
}

// flagsOf parses the flag column of a help text ("  --db PATH  ...",
// "  -v, --verbose  ...").
func flagsOf(help string) []string {
	var flags []string
	for _, line := range strings.Split(help, "\n") {
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		head := strings.Fields(line)
		for _, w := range head {
			w = strings.TrimSuffix(w, ",")
			if !strings.HasPrefix(w, "-") {
				break
			}
			flags = append(flags, w)
		}
	}
	return flags
}

// docFlags returns the flags a doc line uses: words that start with "-",
// brackets, alternatives and values cut off.
func docFlags(words []string) []string {
	var flags []string
	for _, w := range words {
		w = strings.Trim(w, "[]()|")
		if len(w) < 2 || !strings.HasPrefix(w, "-") {
			continue
		}
		name, _, _ := strings.Cut(w, "=")
		flags = append(flags, name)
	}
	return flags
}

// Every command line the docs show names a real subcommand of the server
// binary, or of the go tool with packages of this module, and only flags
// that exist: a renamed flag or subcommand fails here, not in a reader's
// terminal.
func TestDocCommandsAreReal(t *testing.T) {
	t.Parallel()
	if os.Getenv(raceEnv) != "" {
		t.Skip("runs only each subcommand's help, no serving front: the race run is for the front, and the plain run covers this")
	}
	cmds := docCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("found only %d command lines in README.md and docs/", len(cmds))
	}
	helps := map[string][]string{} // subcommand ("" = serve) -> its flags
	serverFlags := func(sub string) []string {
		if f, ok := helps[sub]; ok {
			return f
		}
		args := []string{"help", sub}
		switch sub {
		case "":
			args = []string{"--help"}
		case "help":
			args = []string{"help"}
		}
		out, err := exec.Command(serverBin, args...).CombinedOutput()
		if err != nil {
			helps[sub] = nil
			return nil
		}
		f := append(flagsOf(string(out)), "--help", "-h")
		if strings.Contains(string(out), "(any server flag)") {
			f = append(f, serverFlagsOf(t)...)
		}
		helps[sub] = f
		return f
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	for _, c := range cmds {
		var problems []string
		switch c.words[0] {
		case "mcp-sqlite-memory":
			problems = checkServerLine(c.words[1:], serverFlags)
		case "go":
			problems = checkGoLine(goTool, c.words, serverFlags)
		case "mcp-sqlite-memory-eval":
			problems = checkEvalLine(t, c.words[1:])
		}
		for _, p := range problems {
			t.Errorf("%s: %s\n  %s", c.where, p, strings.Join(c.words, " "))
		}
	}
}

// checkEvalLine checks the flags of an mcp-sqlite-memory-eval line against
// its --help (Go's flag package: -name and --name are the same flag).
func checkEvalLine(t *testing.T, args []string) (problems []string) {
	out, err := exec.Command(evalBin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("mcp-sqlite-memory-eval --help: %v\n%s", err, out)
	}
	var flags []string
	for _, f := range flagsOf(string(out)) {
		flags = append(flags, strings.TrimLeft(f, "-"))
	}
	for _, f := range docFlags(args) {
		if !slices.Contains(flags, strings.TrimLeft(f, "-")) {
			problems = append(problems, fmt.Sprintf("mcp-sqlite-memory-eval has no flag %s (it has %v)", f, flags))
		}
	}
	if len(problems) == 0 && len(flags) < 5 {
		problems = append(problems, fmt.Sprintf("mcp-sqlite-memory-eval --help lists only %v", flags))
	}
	return problems
}

func serverFlagsOf(t *testing.T) []string {
	out, err := exec.Command(serverBin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	return flagsOf(string(out))
}

// checkServerLine checks args (after the program name): a subcommand, if
// the first word is not a flag, and every flag.
func checkServerLine(args []string, flagsFor func(string) []string) (problems []string) {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub = args[0]
	}
	flags := flagsFor(sub)
	if flags == nil {
		return []string{fmt.Sprintf("%q is not a subcommand of mcp-sqlite-memory (mcp-sqlite-memory help %s fails)", sub, sub)}
	}
	for _, f := range docFlags(args) {
		if !slices.Contains(flags, f) {
			problems = append(problems, fmt.Sprintf("mcp-sqlite-memory %s has no flag %s (it has %v)", sub, f, flags))
		}
	}
	return problems
}

// checkGoLine checks a go command: the verb, its flags, and that every
// package of this module it names exists; `go run` of one of the
// module's commands checks that command's arguments too.
func checkGoLine(goTool string, words []string, flagsFor func(string) []string) (problems []string) {
	if len(words) < 2 {
		return []string{"a go command without a verb"}
	}
	verb := words[1]
	help, err := exec.Command(goTool, "help", verb).CombinedOutput()
	if err != nil {
		return []string{fmt.Sprintf("go %s is not a go command", verb)}
	}
	if verb == "test" {
		more, _ := exec.Command(goTool, "help", "testflag").CombinedOutput()
		help = append(help, more...)
	}
	args := words[2:]
	for i, w := range args {
		switch {
		case strings.HasPrefix(w, "-"):
			name, _, _ := strings.Cut(w, "=")
			name = "-" + strings.TrimLeft(name, "-")
			// A flag is listed indented, or told of in prose ("The -o flag").
			q := regexp.QuoteMeta(name)
			if !regexp.MustCompile(`(?m)^\s+` + q + `\b|\bThe ` + q + ` flag\b`).Match(help) {
				problems = append(problems, fmt.Sprintf("go %s has no flag %s", verb, name))
			}
		case strings.HasPrefix(w, "./"):
			dir := filepath.Join("..", strings.TrimSuffix(strings.TrimSuffix(w, "..."), "/"))
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				problems = append(problems, fmt.Sprintf("no package %s in this module", w))
			}
			if verb == "run" && strings.HasPrefix(w, "./cmd/") {
				// The command's own arguments: the server binary's.
				return append(problems, checkServerLine(args[i+1:], flagsFor)...)
			}
		}
	}
	return problems
}

// The check above can fail: a made-up subcommand, a made-up flag, a go
// verb and a package that do not exist are all caught.
func TestDocCommandCheckCatchesMistakes(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	flagsFor := func(sub string) []string {
		switch sub {
		case "":
			return []string{"--db"}
		case "verify":
			return []string{"--db"}
		}
		return nil
	}
	for _, line := range []string{
		"mcp-sqlite-memory vrify --db x.db",
		"mcp-sqlite-memory verify --database x.db",
		"go tset ./...",
		"go test -shortest ./...",
		"go build ./cmd/no-such-command",
		"go run ./cmd/server dmeo",
	} {
		t.Run(line, func(t *testing.T) {
			words := strings.Fields(line)
			var problems []string
			if words[0] == "go" {
				problems = checkGoLine(goTool, words, flagsFor)
			} else {
				problems = checkServerLine(words[1:], flagsFor)
			}
			if len(problems) == 0 {
				t.Errorf("%q passed the check", line)
			}
		})
	}
}
