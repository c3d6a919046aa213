// Command skipcheck reads `go test -json` and prints what `go test` prints
// without -v (an ok line per passing package, the whole output of what
// failed, benchmark results), then every test that skipped with its reason.
// A skip is allowed when a rule of the allow file matches
// "PACKAGE TEST: REASON" (PACKAGE relative to the module, "." for its
// root); any other skip fails the step, so that a missing tool or a
// forgotten install can never hide a test (docs/development.md lists the
// reasons allowed to remain). It exits 1 when a test or package failed or
// a skip is not allowed; with -skips-only, only for a skip (.ci/windows.sh
// judges the Wine runs' skips so, against .ci/allowed-skips-wine).
//
//	go test -json -short ./... | go run ./.ci/skipcheck -allow .ci/allowed-skips
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (test2json's TestEvent).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output events
}

// rule is one allowed reason: a regular expression over "PKG TEST: REASON".
type rule struct {
	re   *regexp.Regexp
	line int
}

// skip is a test that skipped and why.
type skip struct{ pkg, test, reason string }

func (s skip) String() string { return s.pkg + " " + s.test + ": " + s.reason }

var (
	// logPrefix is the "    file_test.go:12: " a t.Log or t.Skip line starts with.
	logPrefix = regexp.MustCompile(`^\s+[A-Za-z0-9_.-]+\.go:[0-9]+: `)
	// benchResult is a benchmark's figure line.
	benchResult = regexp.MustCompile(`^Benchmark\S*\s+[0-9]+\s`)
	marker      = regexp.MustCompile(`^(=== (RUN|PAUSE|CONT|NAME)|--- (SKIP|PASS|FAIL):)`)
)

func main() {
	allow := flag.String("allow", ".ci/allowed-skips", "the allow file: one regular expression a line over \"PACKAGE TEST: REASON\"; # starts a comment")
	module := flag.String("module", "github.com/mcp-sqlite-memory/mcp-sqlite-memory", "the module path, cut from package names")
	skipsOnly := flag.Bool("skips-only", false, "judge the skips alone: print no test output and leave failures to another tool (.ci/winereport under Wine)")
	flag.Parse()
	rules, err := readRules(*allow)
	if err != nil {
		fmt.Fprintln(os.Stderr, "skipcheck:", err)
		os.Exit(2)
	}
	out := io.Writer(os.Stdout)
	if *skipsOnly {
		out = io.Discard
	}
	skips, failed, err := filter(os.Stdin, out, *module)
	if err != nil {
		fmt.Fprintln(os.Stderr, "skipcheck:", err)
		os.Exit(2)
	}
	if *skipsOnly {
		failed = false
	}
	if !report(os.Stdout, skips, rules, *allow) || failed {
		os.Exit(1)
	}
}

func readRules(path string) ([]rule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rules []rule
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		re, err := regexp.Compile(l)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		rules = append(rules, rule{re, i + 1})
	}
	return rules, nil
}

// filter copies the events' text as go test without -v would print it and
// returns the skips and whether anything failed.
func filter(r io.Reader, w io.Writer, module string) ([]skip, bool, error) {
	type key struct{ pkg, test string }
	lines := map[key][]string{}
	var skips []skip
	failed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Action == "" {
			fmt.Fprintln(w, sc.Text()) // not an event: the go command's own words
			continue
		}
		pkg := shortPackage(e.Package, module)
		k := key{pkg, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "build-fail":
			failed = true
		case "output":
			if benchResult.MatchString(e.Output) {
				fmt.Fprint(w, e.Output)
			}
			lines[k] = append(lines[k], e.Output)
		case "skip":
			if e.Test != "" {
				skips = append(skips, skip{pkg, e.Test, reason(lines[k])})
			} else {
				fmt.Fprint(w, okLine(lines[k]))
			}
			delete(lines, k)
		case "pass":
			if e.Test == "" {
				fmt.Fprint(w, okLine(lines[k]))
			}
			delete(lines, k)
		case "fail":
			failed = true
			fmt.Fprint(w, strings.Join(lines[k], ""))
			delete(lines, k)
		}
	}
	return skips, failed, sc.Err()
}

func shortPackage(p, module string) string {
	switch {
	case p == module:
		return "."
	case strings.HasPrefix(p, module+"/"):
		return p[len(module)+1:]
	}
	return p
}

// okLine is a passing package's summary ("ok  pkg  1.2s", or "?  pkg [no
// test files]"), without the PASS line and the tests' logs before it.
func okLine(out []string) string {
	var b strings.Builder
	for _, l := range out {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "? ") || strings.HasPrefix(l, "ok\t") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// reason is a skipped test's last log entry (t.Skip's message and its
// continuation lines), on one line.
func reason(out []string) string {
	var last []string
	for _, l := range out {
		l = strings.TrimRight(l, "\n")
		switch {
		case marker.MatchString(l), strings.HasPrefix(l, "Benchmark") && !strings.Contains(l, " "):
		case logPrefix.MatchString(l):
			last = []string{logPrefix.ReplaceAllString(l, "")}
		case len(last) > 0 && strings.HasPrefix(l, "    "):
			last = append(last, strings.TrimSpace(l))
		}
	}
	if len(last) == 0 {
		return "(no reason given)"
	}
	s := strings.Join(last, " ")
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

// report prints the skips, allowed first, and says whether all were.
func report(w io.Writer, skips []skip, rules []rule, allowFile string) bool {
	sort.Slice(skips, func(i, j int) bool { return skips[i].String() < skips[j].String() })
	var allowed, refused []string
	for _, s := range skips {
		ok := false
		for _, r := range rules {
			if r.re.MatchString(s.String()) {
				ok = true
				break
			}
		}
		if ok {
			allowed = append(allowed, s.String())
		} else {
			refused = append(refused, s.String())
		}
	}
	if len(allowed) > 0 {
		fmt.Fprintf(w, "skipped, for a reason %s allows (%d):\n", allowFile, len(allowed))
		for _, s := range allowed {
			fmt.Fprintln(w, "  skip", s)
		}
	}
	if len(refused) > 0 {
		fmt.Fprintf(w, "SKIPPED FOR A REASON %s DOES NOT ALLOW (%d): install what they need, or fix them; docs/development.md lists the allowed reasons\n", allowFile, len(refused))
		for _, s := range refused {
			fmt.Fprintln(w, "  SKIP", s)
		}
	}
	return len(refused) == 0
}
