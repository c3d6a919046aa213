package main

import (
	"regexp"
	"strings"
	"testing"
)

const mod = "example.com/m"

// events is a go test -json stream: a package with a skipped test (two
// lines of reason, after a log line), a skipped subtest, a skipped
// benchmark, a passing benchmark; a failing package; a package without
// tests.
const events = `{"Action":"start","Package":"example.com/m/a"}
{"Action":"run","Package":"example.com/m/a","Test":"TestA"}
{"Action":"output","Package":"example.com/m/a","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"example.com/m/a","Test":"TestA","Output":"    a_test.go:3: a log line\n"}
{"Action":"output","Package":"example.com/m/a","Test":"TestA","Output":"    a_test.go:4: why\n"}
{"Action":"output","Package":"example.com/m/a","Test":"TestA","Output":"        on two lines\n"}
{"Action":"output","Package":"example.com/m/a","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"example.com/m/a","Test":"TestA"}
{"Action":"output","Package":"example.com/m/a","Test":"TestB/s","Output":"=== CONT  TestB/s\n"}
{"Action":"output","Package":"example.com/m/a","Test":"TestB/s","Output":"    a_test.go:9: Landlock is not available\n"}
{"Action":"skip","Package":"example.com/m/a","Test":"TestB/s"}
{"Action":"output","Package":"example.com/m/a","Test":"TestB","Output":"--- PASS: TestB (0.00s)\n"}
{"Action":"pass","Package":"example.com/m/a","Test":"TestB"}
{"Action":"output","Package":"example.com/m/a","Test":"BenchmarkC","Output":"BenchmarkC\n"}
{"Action":"skip","Package":"example.com/m/a","Test":"BenchmarkC"}
{"Action":"output","Package":"example.com/m/a","Test":"BenchmarkD","Output":"BenchmarkD-2   \t       1\t       260.0 ns/op\n"}
{"Action":"output","Package":"example.com/m/a","Output":"PASS\n"}
{"Action":"output","Package":"example.com/m/a","Output":"ok  \texample.com/m/a\t0.057s\n"}
{"Action":"pass","Package":"example.com/m/a"}
{"Action":"output","Package":"example.com/m/b","Test":"TestF","Output":"=== RUN   TestF\n"}
{"Action":"output","Package":"example.com/m/b","Test":"TestF","Output":"    b_test.go:7: boom\n"}
{"Action":"output","Package":"example.com/m/b","Test":"TestF","Output":"--- FAIL: TestF (0.00s)\n"}
{"Action":"fail","Package":"example.com/m/b","Test":"TestF"}
{"Action":"output","Package":"example.com/m/b","Output":"FAIL\n"}
{"Action":"output","Package":"example.com/m/b","Output":"FAIL\texample.com/m/b\t0.01s\n"}
{"Action":"fail","Package":"example.com/m/b"}
{"Action":"output","Package":"example.com/m","Output":"?   \texample.com/m\t[no test files]\n"}
{"Action":"skip","Package":"example.com/m"}
go: a line of the go command
`

func TestFilter(t *testing.T) {
	var out strings.Builder
	skips, failed, err := filter(strings.NewReader(events), &out, mod)
	if err != nil || !failed {
		t.Fatalf("err %v, failed %v: want the failing package seen", err, failed)
	}
	want := "BenchmarkD-2   \t       1\t       260.0 ns/op\n" +
		"ok  \texample.com/m/a\t0.057s\n" +
		"=== RUN   TestF\n    b_test.go:7: boom\n--- FAIL: TestF (0.00s)\n" +
		"FAIL\nFAIL\texample.com/m/b\t0.01s\n" +
		"?   \texample.com/m\t[no test files]\n" +
		"go: a line of the go command\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	var got []string
	for _, s := range skips {
		got = append(got, s.String())
	}
	wantSkips := []string{"a TestA: why on two lines", "a TestB/s: Landlock is not available", "a BenchmarkC: (no reason given)"}
	if strings.Join(got, "\n") != strings.Join(wantSkips, "\n") {
		t.Errorf("skips:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantSkips, "\n"))
	}
}

func TestReport(t *testing.T) {
	skips := []skip{{"a", "TestB/s", "Landlock is not available"}, {"tests", "TestL", "no litestream binary"}}
	rules := []rule{{re: regexp.MustCompile(`^a Test\S+: Landlock is not available`)}}
	var out strings.Builder
	if report(&out, skips, rules, "allow") {
		t.Errorf("a skip no rule matches passed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "  skip a TestB/s: Landlock") || !strings.Contains(out.String(), "  SKIP tests TestL: no litestream binary") {
		t.Errorf("report:\n%s", out.String())
	}
	out.Reset()
	if !report(&out, skips[:1], rules, "allow") {
		t.Errorf("an allowed skip failed:\n%s", out.String())
	}
}
