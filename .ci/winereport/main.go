// Command winereport reads `go tool test2json` events of a test binary run
// under Wine and prints what ran, passed, skipped (with the reason) and
// failed. Wine 8 answers os.RemoveAll's POSIX-semantics delete with
// "Invalid function", so every t.TempDir cleanup fails there: a test whose
// only failure lines are those cleanups passed. It exits 1 when a test
// really failed (or the binary died), 0 otherwise.
//
//	wine pkg.test.exe -test.v=test2json ... | go tool test2json -t -p pkg | go run ./.ci/winereport -p pkg
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

type result struct {
	action  string
	lines   []string
	elapsed float64
}

var (
	// failLine is a t.Error/t.Fatal line: "    file.go:12: message".
	failLine = regexp.MustCompile(`^\s+[A-Za-z0-9_]+\.go:[0-9]+: `)
	// logLine is an hclog line written through t.Log, not a failure.
	logLine     = regexp.MustCompile(`\.go:[0-9]+: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+[-+Z0-9:]* \[(TRACE|DEBUG|INFO|WARN|ERROR)\]`)
	cleanupLine = regexp.MustCompile(`TempDir RemoveAll cleanup: .*Invalid function`)
)

func main() {
	pkg := flag.String("p", "tests", "the package's name, for the report")
	verbose := flag.Bool("v", false, "list every test that passed too")
	failedFile := flag.String("failed", "", "write the names of the tests that failed, one a line, to this file")
	flag.Parse()

	results := map[string]*result{}
	var order []string
	var pkgOutput []string
	pkgAction := ""
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			pkgOutput = append(pkgOutput, sc.Text())
			continue
		}
		if e.Test == "" {
			if e.Action == "output" {
				pkgOutput = append(pkgOutput, strings.TrimRight(e.Output, "\n"))
			} else if e.Action == "pass" || e.Action == "fail" {
				pkgAction = e.Action
			}
			continue
		}
		r := results[e.Test]
		if r == nil {
			r = &result{}
			results[e.Test] = r
			order = append(order, e.Test)
		}
		switch e.Action {
		case "output":
			r.lines = append(r.lines, strings.TrimRight(e.Output, "\n"))
		case "pass", "fail", "skip":
			r.action, r.elapsed = e.Action, e.Elapsed
		}
	}

	// A test failed for real when a failure line of its own is not a
	// cleanup, or a subtest of it failed for real.
	realFail := map[string]bool{}
	for _, name := range order {
		r := results[name]
		if r.action != "fail" {
			continue
		}
		for _, l := range r.lines {
			if failLine.MatchString(l) && !logLine.MatchString(l) && !cleanupLine.MatchString(l) {
				realFail[name] = true
			}
		}
	}
	for _, name := range order {
		if realFail[name] {
			for p := parent(name); p != ""; p = parent(p) {
				realFail[p] = true
			}
		}
	}

	var passed, skipped, failed, cleanupOnly []string
	for _, name := range order {
		if strings.Contains(name, "/") {
			continue // subtests count with their test
		}
		switch r := results[name]; {
		case r.action == "skip":
			skipped = append(skipped, name+": "+skipReason(r.lines))
		case r.action == "pass":
			passed = append(passed, name)
		case r.action == "fail" && !realFail[name]:
			passed = append(passed, name)
			cleanupOnly = append(cleanupOnly, name)
		case r.action == "fail":
			failed = append(failed, name)
		default:
			failed = append(failed, name+" (never ended: the binary died or timed out)")
		}
	}
	sort.Strings(skipped)
	fmt.Printf("wine: %s: %d tests run, %d passed, %d skipped, %d failed", *pkg, len(passed)+len(failed), len(passed), len(skipped), len(failed))
	if len(cleanupOnly) > 0 {
		fmt.Printf(" (%d failed only their temp-folder cleanup, a Wine 8 limitation, counted as passed)", len(cleanupOnly))
	}
	fmt.Println()
	if *verbose {
		for _, p := range passed {
			fmt.Println("  pass", p)
		}
	}
	for _, s := range skipped {
		fmt.Println("  skip", s)
	}
	for _, f := range failed {
		fmt.Println("  FAIL", f)
		name := strings.Fields(f)[0]
		shown := 0
		for _, n := range order {
			if n != name && !strings.HasPrefix(n, name+"/") {
				continue
			}
			for _, l := range results[n].lines {
				if failLine.MatchString(l) && !logLine.MatchString(l) && !cleanupLine.MatchString(l) && shown < 12 {
					if len(l) > 300 {
						l = l[:300] + fmt.Sprintf("...[%d bytes]", len(l))
					}
					fmt.Println("      " + strings.TrimSpace(l))
					shown++
				}
			}
		}
	}
	if *failedFile != "" {
		var names []string
		for _, f := range failed {
			names = append(names, strings.Fields(f)[0])
		}
		if err := os.WriteFile(*failedFile, []byte(strings.Join(names, "\n")), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	died := pkgAction == "" || (pkgAction == "fail" && len(failed) == 0 && len(cleanupOnly) == 0)
	if died {
		fmt.Println("  the test binary did not end normally; its last lines:")
		from := len(pkgOutput) - 20
		if from < 0 {
			from = 0
		}
		for _, l := range pkgOutput[from:] {
			fmt.Println("      " + l)
		}
	}
	if len(failed) > 0 || died {
		os.Exit(1)
	}
}

// parent is the name of the test a subtest belongs to, "" for a top one.
func parent(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[:i]
	}
	return ""
}

// skipReason is the message t.Skip printed: the last file:line line.
func skipReason(lines []string) string {
	reason := "no reason given"
	for _, l := range lines {
		if failLine.MatchString(l) && !logLine.MatchString(l) {
			reason = strings.TrimSpace(l[strings.Index(l, ": ")+2:])
		}
	}
	return reason
}
