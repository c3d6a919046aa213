package tests

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The ways in without Go (docs/install.md): a release archive, the npm
// packages run through their launcher, and the MCP Bundle. Each test here
// builds a release for this machine with scripts/release, as a user would
// download it, and drives the server it unpacks with mcp-go's client.
//
// They need node and npm (and the mcpb CLI), which the README's test
// command does not, so they run when installEnv is set; .ci/run sets it
// and installs what they use.
const (
	installEnv     = "MCP_SQLITE_INSTALL_TESTS"
	mcpbEnv        = "MCP_SQLITE_MCPB" // the mcpb command (default: npx --yes @anthropic-ai/mcpb@2.1.2)
	releaseVersion = "0.0.0-e2e"
)

func needInstallTests(t *testing.T) {
	t.Helper()
	if os.Getenv(installEnv) == "" {
		t.Skip("the install tests build a release and run it through npm and the MCP Bundle CLI: set " + installEnv + "=1 (.ci/run's install step does)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the install tests run on Linux: the other platforms' archives are built and checked there")
	}
}

var (
	releaseOnce sync.Once
	releaseDir  string
	releaseErr  error
)

// hostRelease builds the release for this machine once for all tests.
func hostRelease(t *testing.T) string {
	t.Helper()
	releaseOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-sqlite-memory-release-")
		if err != nil {
			releaseErr = err
			return
		}
		releaseDir = filepath.Join(dir, "dist")
		releaseErr = buildRelease(releaseDir)
	})
	if releaseErr != nil {
		t.Fatal(releaseErr)
	}
	return releaseDir
}

func buildRelease(out string) error {
	cmd := exec.Command("go", "run", "./scripts/release", "-targets", "host", "-out", out, releaseVersion)
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/release: %v\n%s", err, b)
	}
	return nil
}

func hostTarget() (goos, goarch, node string) {
	arch := runtime.GOARCH
	if arch == "amd64" {
		arch = "x64"
	}
	return runtime.GOOS, runtime.GOARCH, runtime.GOOS + "-" + arch
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// commit is the commit the release stamps (the checkout's HEAD).
func commit(t *testing.T) string {
	return strings.TrimSpace(run(t, "..", "git", "rev-parse", "HEAD"))
}

// TestReleaseIsReproducible: building the same commit twice gives the
// same archive, the same SHA256SUMS and the same binaries in the npm
// package and the bundle.
func TestReleaseIsReproducible(t *testing.T) {
	needInstallTests(t)
	first := hostRelease(t)
	second := filepath.Join(testDir(t), "dist")
	if err := buildRelease(second); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(first, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(filepath.Join(second, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sums, again) || len(sums) == 0 {
		t.Fatalf("two builds of one commit differ:\n%s\n%s", sums, again)
	}
	var compared int
	filepath.WalkDir(first, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, string(filepath.Separator)+"stage"+string(filepath.Separator)) {
			return err
		}
		rel, _ := filepath.Rel(first, path)
		a, _ := os.ReadFile(path)
		b, err := os.ReadFile(filepath.Join(second, rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds (%v)", rel, err)
		}
		compared++
		return nil
	})
	if compared < 8 {
		t.Fatalf("compared only %d files", compared)
	}
	// The sums are right, in the form sha256sum -c reads.
	if out := run(t, first, "sha256sum", "-c", "SHA256SUMS"); !strings.Contains(out, ": OK") {
		t.Fatalf("sha256sum -c: %s", out)
	}
}

// TestReleaseArchive: the archive unpacks to both binaries side by side,
// README and LICENSE, and nothing else (not the eval command, which is no
// part of a release); both name the release's version and commit and were
// built without build tags (no test hold); the server it holds serves a
// real MCP session with the worker beside it.
func TestReleaseArchive(t *testing.T) {
	needInstallTests(t)
	dist := hostRelease(t)
	goos, goarch, _ := hostTarget()
	top := fmt.Sprintf("mcp-sqlite-memory_%s_%s_%s", releaseVersion, goos, goarch)
	dir := testDir(t)
	untar(t, filepath.Join(dist, top+".tar.gz"), dir)
	shipped := []string{"LICENSE", "README.md", "mcp-sqlite-memory", "mcp-sqlite-memory-worker"}
	for _, f := range shipped {
		if _, err := os.Stat(filepath.Join(dir, top, f)); err != nil {
			t.Fatalf("the archive has no %s: %v", f, err)
		}
	}
	if entries, err := os.ReadDir(filepath.Join(dir, top)); err != nil || len(entries) != len(shipped) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the archive holds %v (%v), want only %v", names, err, shipped)
	}
	for _, bin := range []string{"mcp-sqlite-memory", "mcp-sqlite-memory-worker"} {
		if tags := buildTags(t, filepath.Join(dir, top, bin)); tags != "" {
			t.Errorf("the archive's %s was built with -tags %s", bin, tags)
		}
	}
	want := releaseVersion + " (commit " + commit(t)[:12] + ")"
	for _, bin := range []string{"mcp-sqlite-memory", "mcp-sqlite-memory-worker"} {
		out := run(t, dir, filepath.Join(dir, top, bin), "--version")
		if strings.TrimSpace(out) != bin+" "+want {
			t.Errorf("%s --version: %q, want %q", bin, out, bin+" "+want)
		}
	}
	db := filepath.Join(testDir(t), "memory.db")
	s, stderr := startCommand(t, db, filepath.Join(dir, top, "mcp-sqlite-memory"), "--db", db, "-v")
	driveSession(t, s)
	if !strings.Contains(stderr.String(), `from="beside the server"`) {
		t.Errorf("the archive's server did not run the worker beside it:\n%s", tail(stderr.String(), 2000))
	}
}

// TestNpxLauncher: the npm packages, packed and installed from their
// tarballs with no registry, give `npx mcp-sqlite-memory`: a real MCP
// session through the launcher, which finds the platform package's
// binaries (the worker beside the server), hands stdio over untouched,
// and passes on exit statuses and signals; stdin's end ends it.
func TestNpxLauncher(t *testing.T) {
	needInstallTests(t)
	dist := hostRelease(t)
	_, _, node := hostTarget()
	packs := testDir(t)
	var tarballs []string
	for _, pkg := range []string{"mcp-sqlite-memory", "mcp-sqlite-memory-" + node} {
		out := run(t, filepath.Join(dist, "npm", pkg), "npm", "pack", "--pack-destination", packs, "--silent")
		tarballs = append(tarballs, filepath.Join(packs, strings.TrimSpace(lastLine(out))))
	}
	prefix := testDir(t)
	// --offline: nothing may come from a registry; the other platforms'
	// optional packages are skipped, as npm skips them on any machine.
	args := append([]string{"install", "--offline", "--no-audit", "--no-fund", "--prefix", prefix}, tarballs...)
	run(t, prefix, "npm", args...)
	launcher := filepath.Join(prefix, "node_modules", ".bin", "mcp-sqlite-memory")
	bin := filepath.Join(prefix, "node_modules", "mcp-sqlite-memory-"+node, "bin")
	for _, b := range []string{"mcp-sqlite-memory", "mcp-sqlite-memory-worker"} {
		if fi, err := os.Stat(filepath.Join(bin, b)); err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("%s after npm install: %v (mode %v)", b, err, fi)
		}
	}

	t.Run("session through npx", func(t *testing.T) {
		npx, err := exec.LookPath("npx")
		if err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(testDir(t), "memory.db")
		s, stderr := startCommand(t, db, npx, "--prefix", prefix, "--offline", "-y", "mcp-sqlite-memory", "--db", db, "-v")
		driveSession(t, s)
		if !strings.Contains(stderr.String(), `from="beside the server"`) || !strings.Contains(stderr.String(), bin) {
			t.Errorf("the launcher's server did not run the platform package's worker:\n%s", tail(stderr.String(), 2000))
		}
	})

	t.Run("exit status passed on", func(t *testing.T) {
		cmd := exec.Command(launcher, "--db", filepath.Join(testDir(t), "m.db"), "--max-workers", "0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "--max-workers") {
			t.Fatalf("a bad flag through the launcher: %v, stderr %q; want exit 2 with the server's message", err, stderr.String())
		}
	})

	for _, tc := range []struct {
		name string
		end  func(cmd *exec.Cmd, stdin io.Closer) error
	}{
		{"stdin EOF ends it", func(_ *exec.Cmd, stdin io.Closer) error { return stdin.Close() }},
		{"SIGTERM passed on", func(cmd *exec.Cmd, _ io.Closer) error { return cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGINT passed on", func(cmd *exec.Cmd, _ io.Closer) error { return cmd.Process.Signal(syscall.SIGINT) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := pipeServer(t, exec.Command(launcher, "--db", filepath.Join(testDir(t), "m.db")))
			cmd := srv.cmd
			// One request and its answer: the server is up behind the
			// launcher, and stdout carries nothing but the protocol.
			srv.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
			line, err := srv.out.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":1,"result":`) {
				t.Fatalf("first stdout line through the launcher %q (%v)", line, err)
			}
			children := childPIDs(t, cmd.Process.Pid)
			if len(children) != 1 {
				t.Fatalf("the launcher has children %v, want its server", children)
			}
			if err := tc.end(cmd, srv.in); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { io.Copy(io.Discard, srv.out); done <- srv.wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("the launcher ended with %v, want status 0 as the server's", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the launcher did not end")
			}
			if processAlive(children[0]) {
				t.Fatalf("the server (pid %d) outlived its launcher", children[0])
			}
		})
	}
}

// TestMCPBundle: the bundle's manifest validates with the MCPB CLI, packs
// into mcp-sqlite-memory.mcpb, and the server it unpacks to, run as the
// manifest says (with the user's settings substituted as a host does),
// serves a real MCP session with the worker beside it.
func TestMCPBundle(t *testing.T) {
	needInstallTests(t)
	dist := hostRelease(t)
	mcpb := []string{"npx", "--yes", "@anthropic-ai/mcpb@2.1.2"}
	if p := os.Getenv(mcpbEnv); p != "" {
		mcpb = []string{p}
	}
	out := run(t, dist, mcpb[0], append(mcpb[1:], "validate", filepath.Join(dist, "mcpb", "manifest.json"))...)
	if !strings.Contains(strings.ToLower(out), "valid") {
		t.Fatalf("mcpb validate: %s", out)
	}
	bundle := filepath.Join(testDir(t), "mcp-sqlite-memory.mcpb")
	run(t, dist, mcpb[0], append(mcpb[1:], "pack", filepath.Join(dist, "mcpb"), bundle)...)

	dir := testDir(t)
	unzip(t, bundle, dir)
	var manifest struct {
		Version string `json:"version"`
		Server  struct {
			MCPConfig struct {
				Command           string            `json:"command"`
				Args              []string          `json:"args"`
				Env               map[string]string `json:"env"`
				PlatformOverrides map[string]struct {
					Command string `json:"command"`
				} `json:"platform_overrides"`
			} `json:"mcp_config"`
		} `json:"server"`
		UserConfig map[string]struct {
			Default any `json:"default"`
		} `json:"user_config"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	if manifest.Version != releaseVersion {
		t.Fatalf("bundle version %q", manifest.Version)
	}
	// What a host does: the user's answers (the database path), the
	// defaults for the rest, ${__dirname} and ${HOME}.
	home := testDir(t)
	values := map[string]string{"${__dirname}": dir, "${HOME}": home}
	for key, c := range manifest.UserConfig {
		values["${user_config."+key+"}"] = fmt.Sprint(c.Default)
	}
	values["${user_config.database_path}"] = filepath.Join(home, "study", "memory.db")
	subst := func(s string) string {
		for k, v := range values {
			s = strings.ReplaceAll(s, k, v)
		}
		return s
	}
	command := manifest.Server.MCPConfig.Command
	if o, ok := manifest.Server.MCPConfig.PlatformOverrides[runtime.GOOS]; ok && o.Command != "" {
		command = o.Command
	}
	var args []string
	for _, a := range manifest.Server.MCPConfig.Args {
		args = append(args, subst(a))
	}
	if strings.Contains(strings.Join(args, " "), "${") {
		t.Fatalf("unsubstituted variables in %q", args)
	}
	s, stderr := startCommand(t, values["${user_config.database_path}"], subst(command), append(args, "-v")...)
	driveSession(t, s)
	if !strings.Contains(stderr.String(), `from="beside the server"`) {
		t.Errorf("the bundle's server did not run the worker beside it:\n%s", tail(stderr.String(), 2000))
	}
	if _, err := os.Stat(filepath.Join(home, "study", "memory.db")); err != nil {
		t.Errorf("the memory is not where the user said: %v", err)
	}
}

// driveSession makes the calls a first session makes: tools, a table, a
// row, memory, and a read back.
func driveSession(t *testing.T, s *session) {
	t.Helper()
	tools, err := s.c.ListTools(context.Background(), mcpListTools())
	if err != nil || len(tools.Tools) != 14 {
		t.Fatalf("tools/list: %d tools, %v", len(tools.Tools), err)
	}
	s.ok("write_query", q("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)"))
	s.ok("write_query", q("INSERT INTO notes(body) VALUES ('installed without Go')"))
	if got := s.ok("read_query", q("SELECT body FROM notes")); !strings.Contains(got, "installed without Go") {
		t.Fatalf("read_query: %q", got)
	}
	s.ok("append_event", map[string]any{"content": "first session of an installed server"})
	if got := s.ok("get_resume_context", map[string]any{}); !strings.Contains(got, "chain ok (1 events)") {
		t.Fatalf("get_resume_context: %q", got)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// childPIDs are the children of pid (Linux: /proc's children lists).
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var pids []int
	for _, f := range tasks {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(field); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

func processAlive(pid int) bool {
	// A zombie still answers signal 0; read its state instead.
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func untar(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			writeEntry(t, target, tr, fs.FileMode(h.Mode))
		}
	}
}

func unzip(t *testing.T, path, dir string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		mode := f.Mode().Perm()
		if mode == 0 {
			mode = 0o644
		}
		writeEntry(t, filepath.Join(dir, filepath.FromSlash(f.Name)), r, mode)
		r.Close()
	}
}

func writeEntry(t *testing.T, path string, r io.Reader, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, r); err != nil {
		t.Fatal(err)
	}
	f.Close()
}
