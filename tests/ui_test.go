package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The payloads the agent writes: each would change the page if it ran
// (the title, a new element, a dialog) or navigate away when clicked.
const (
	uiEventPayload = `<script>document.title="pwned-event"</script></title><img src=x onerror="document.body.append(document.createElement('hr'))"><a id="js" href="javascript:document.title='pwned-link'">click</a>`
	uiViewPayload  = `<script>alert("pwned-view")</script></title><img src=x onerror="document.title='pwned-view'">`
	uiSQLPayload   = `DROP TABLE notes -- <script>document.title="pwned-sql"</script></title><img src=x onerror="alert(1)"><a href="javascript:alert(2)">x</a>`
)

// chromiumPath is Debian's chromium (what .ci/run installs), or another
// Chromium-based browser on PATH.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: .ci/run installs it (apt-get install chromium); the browser test must run in CI")
	}
	t.Skip("no chromium on PATH (apt-get install chromium); CI=true makes this a failure")
	return ""
}

// fileDigest hashes the database file and its WAL. The test process
// holds no SQLite connection to this file (the servers are children), so
// reading it drops no lock.
func fileDigest(t *testing.T, db string) [32]byte {
	t.Helper()
	h := sha256.New()
	for _, p := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// startUI runs the real binary's ui command and returns its printed URL.
func startUI(t *testing.T, db string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(serverBin, "ui", "--db", db)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := regexp.MustCompile(`http://\S+`).FindString(sc.Text()); m != "" {
				found <- m
			}
		}
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("ui printed no URL; stderr: %s", stderr.String())
		}
		return cmd, u
	case <-time.After(30 * time.Second):
		t.Fatalf("ui printed no URL in 30 s; stderr: %s", stderr.String())
	}
	return nil, ""
}

// TestUIInBrowser drives the person's view in a real headless Chromium:
// a memory with a script payload in an event, a view description and a
// refused statement, a full snapshot and an undo record, and a server
// still running on the file. Every page shows the rows as text and runs
// nothing; the file's bytes do not change; requests without the cookie,
// with a bad Host or from another origin are refused.
func TestUIInBrowser(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the browser test runs on Linux (Debian's chromium)")
	}
	chromium := chromiumPath(t)
	db := newDB(t)
	s := start(t, db, "--snapshot-mode", "full")
	s.ok("append_event", map[string]any{"content": uiEventPayload, "kind": "note"})
	s.ok("write_query", q(`CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)`))
	s.ok("write_query", q(`INSERT INTO notes(body) VALUES ('one'), ('two'), ('three')`))
	s.ok("create_view", map[string]any{"name": "recent_notes", "select_sql": "SELECT * FROM notes ORDER BY id DESC", "description": uiViewPayload})
	s.fails("write_query", q(uiSQLPayload), "READ_ONLY_VIOLATION")
	s.ok("destructive_query", map[string]any{"query": "DELETE FROM notes WHERE id = 1", "reason": "drop the first note"})
	s.ok("checkpoint", map[string]any{"summary": "notes table made; first note dropped"})
	s.audited(db)
	s.c.Close()
	// A second server, left running while the pages are read.
	s = start(t, db, "--snapshot-mode", "undo")
	s.ok("destructive_query", map[string]any{"query": "DELETE FROM notes WHERE id = 2", "reason": "drop the second note"})
	s.ok("append_event", map[string]any{"content": "the login cookie bug is fixed", "kind": "decision"})
	s.audited(db)
	before := fileDigest(t, db)

	cmd, start := startUI(t, db)
	u, err := url.Parse(start)
	if err != nil {
		t.Fatal(err)
	}
	origin := u.Scheme + "://" + u.Host

	shots := os.Getenv("MCP_SQLITE_UI_SHOTS")
	if shots == "" {
		shots = filepath.Join(testDir(t), "shots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(testDir(t), "profile")
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 900))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	var mu sync.Mutex
	var ran []string // dialogs and exceptions: a payload that ran
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *cdppage.EventJavascriptDialogOpening:
			ran = append(ran, "dialog: "+e.Message)
		case *cdpruntime.EventExceptionThrown:
			ran = append(ran, "exception: "+e.ExceptionDetails.Text)
		}
	}); err != nil {
		t.Fatal(err)
	}
	run := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatal(expr, err)
		}
		return v
	}

	// The printed URL: its secret is traded for the cookie and dropped.
	run(chromedp.Navigate(start))
	if loc := eval(`location.href`); strings.Contains(loc, "secret") {
		t.Fatalf("the secret stayed in the URL: %s", loc)
	}
	pages := []struct {
		name, link, title string
		want              []string // text the page shows, as text
	}{
		{"timeline", "", "Timeline", []string{uiEventPayload, "notes table made; first note dropped", "the login cookie bug is fixed"}},
		{"chain", "/chain", "Chain", []string{"Verified: all 2 events", "head hash"}},
		{"activity", "/activity", "Activity", []string{uiSQLPayload, "READ_ONLY_VIOLATION", "refused", "destructive_query", "Calls per hour by tool"}},
		{"snapshots", "/snapshots", "Snapshots", []string{"drop the first note", "drop the second note", "undo record", "full copy", "1 rows in notes", "mcp-sqlite-memory restore --db " + db}},
		{"tables", "/tables", "Tables", []string{"recent_notes", uiViewPayload, "notes"}},
	}
	for _, p := range pages {
		if p.link != "" {
			// A click on the menu, as a person would.
			run(chromedp.Click(chromedp.CSS(`nav a[href="`+p.link+`"]`)), chromedp.WaitVisible(chromedp.CSS("main h1")))
		}
		if got := eval(`document.title`); got != p.title+" · mcp-sqlite-memory" {
			t.Errorf("%s: document.title = %q: a payload ran", p.name, got)
		}
		text := eval(`document.body.innerText`)
		for _, w := range p.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the page does not show %q as text", p.name, w)
			}
		}
		counts := eval(`JSON.stringify([document.scripts.length, document.querySelectorAll('hr').length, document.images.length, document.querySelectorAll('a[href^="javascript:" i], [onerror], [onclick], [style]').length, document.querySelectorAll('#js').length])`)
		if counts != "[0,0,0,0,0]" {
			t.Errorf("%s: scripts, added nodes, images, script links, agent-made elements = %s", p.name, counts)
		}
		dom := eval(`document.documentElement.outerHTML`)
		if strings.Contains(dom, "<script") || strings.Contains(dom, "<img") {
			t.Errorf("%s: the DOM holds an element the agent wrote", p.name)
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, "ui-"+p.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The filters and the search, through the form.
	run(chromedp.Click(chromedp.CSS(`nav a[href="/"]`)), chromedp.WaitVisible(chromedp.CSS(`input[name="q"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="q"]`), "login cookie"), chromedp.Submit(chromedp.CSS(`input[name="q"]`)),
		// The ranked page's own header cell (score, the sixth): the timeline before the
		// submit has a table.rows too, and a wait that finds it would let
		// the next navigation abort the search's (net::ERR_ABORTED).
		chromedp.WaitVisible(chromedp.CSS(`table.rows thead th:nth-child(6)`)))
	if text := eval(`document.querySelector('table.rows tbody tr').innerText`); !strings.Contains(text, "the login cookie bug is fixed") {
		t.Errorf("search: the first row is %q", text)
	}
	run(chromedp.Navigate(origin + "/activity?errors=1"))
	if rows := eval(`String(document.querySelectorAll('table.rows tbody tr.refused').length) + "/" + String([...document.querySelectorAll('table.rows')].pop().tBodies[0].rows.length)`); rows != "1/1" {
		t.Errorf("activity errors only: refused/rows = %s", rows)
	}
	if err := os.WriteFile(filepath.Join(shots, "ui-activity-errors.png"), mustShot(t, bctx), 0o644); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(ran) > 0 {
		t.Errorf("the browser ran something: %v", ran)
	}
	mu.Unlock()

	// The export the page offers is the export command's.
	got, err := chromedp.Call(bctx, network.GetCookies, network.GetCookiesParams{URLs: []string{origin + "/"}})
	cookies := got.Cookies
	if err != nil || len(cookies) != 1 || !cookies[0].HTTPOnly || cookies[0].SameSite != network.CookieSameSiteStrict {
		t.Fatalf("cookies %+v, %v", cookies, err)
	}
	cookie := cookies[0].Name + "=" + cookies[0].Value
	status, body := uiGet(t, origin+"/export.jsonl", "Cookie", cookie)
	want, err := exec.Command(serverBin, "export", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	if status != 200 || !bytes.Equal(body, want) {
		t.Errorf("export download: status %d, %d bytes; export command: %d bytes", status, len(body), len(want))
	}

	// Refused requests.
	for _, r := range []struct {
		name   string
		header []string
		status int
	}{
		{"the cookie", []string{"Cookie", cookie}, 200},
		{"no cookie", nil, 401},
		{"bad Host", []string{"Cookie", cookie, "Host", "evil.example"}, 421},
		{"another Origin", []string{"Cookie", cookie, "Origin", "http://evil.example"}, 403},
		{"the used secret", nil, 401},
	} {
		target := origin + "/"
		if r.name == "the used secret" {
			target = start
		}
		if got, _ := uiGet(t, target, r.header...); got != r.status {
			t.Errorf("%s: status %d, want %d", r.name, got, r.status)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, origin+"/", strings.NewReader("x"))
	req.Header.Set("Cookie", cookie)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	cancelBrowser()
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	if fileDigest(t, db) != before {
		t.Fatal("the database file changed while the pages were read")
	}
	t.Logf("screenshots in %s", shots)
}

func mustShot(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	return png
}

// uiGet fetches target without following redirects; header holds name,
// value pairs ("Host" sets the request's host).
func uiGet(t *testing.T, target string, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
