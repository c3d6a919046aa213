// Command release builds what a user installs without Go: one archive per
// platform (both binaries, README, LICENSE) with SHA256SUMS, the npm
// packages (a launcher and one package per platform holding both
// binaries) and the folder of the MCP Bundle for Claude Desktop, plus the
// MCP Registry's server.json. scripts/release.sh runs it; docs/install.md
// says what each is.
//
// The same commit and toolchain give the same bytes: binaries are built
// with -trimpath, without cgo or VCS stamping, the version and commit set
// with -ldflags -X; archive entries are sorted, owned by nobody, and dated
// at the commit's time.
//
// It imports nothing of the project: it builds the binaries with the go
// command, as a user would.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	module     = "github.com/mcp-sqlite-memory/mcp-sqlite-memory"
	serverName = "mcp-sqlite-memory"
	workerName = "mcp-sqlite-memory-worker"
)

// target is one platform a release is built for.
type target struct{ goos, goarch string }

func (t target) String() string { return t.goos + "/" + t.goarch }

// node is the platform's name as Node.js spells it (process.platform and
// process.arch), which npm's os/cpu fields and the launcher use.
func (t target) node() string {
	os := t.goos
	if os == "windows" {
		os = "win32"
	}
	arch := t.goarch
	if arch == "amd64" {
		arch = "x64"
	}
	return os + "-" + arch
}

func (t target) exe() string {
	if t.goos == "windows" {
		return ".exe"
	}
	return ""
}

// allTargets are the platforms a release covers.
var allTargets = []target{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// bundleTargets are the builds the MCP Bundle carries: the manifest can
// pick a command per OS but not per CPU, so each OS gets the one Claude
// Desktop runs on (Apple silicon; x64 on Windows, which arm64 Windows
// also runs).
var bundleTargets = map[string]target{
	"linux":  {"linux", "amd64"},
	"darwin": {"darwin", "arm64"},
	"win32":  {"windows", "amd64"},
}

// options are the command line.
type options struct {
	version string
	commit  string
	date    time.Time
	out     string
	root    string
	targets []target
}

func main() {
	o, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(2)
	}
	if err := run(o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

var semver = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

func parseArgs(args []string) (options, error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	out := fs.String("out", "dist", "folder to write the release into (emptied first)")
	targets := fs.String("targets", "", "comma-separated GOOS/GOARCH list (default: all six; \"host\" for this machine's)")
	commit := fs.String("commit", "", "the commit to stamp (default: git rev-parse HEAD)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() != 1 {
		return options{}, errors.New("usage: release [-out DIR] [-targets LIST] VERSION   (for example: release 0.4.0)")
	}
	v := strings.TrimPrefix(fs.Arg(0), "v")
	if !semver.MatchString(v) {
		return options{}, fmt.Errorf("version %q is not a semantic version such as 0.4.0 or 0.4.0-rc.1", fs.Arg(0))
	}
	root, err := moduleRoot()
	if err != nil {
		return options{}, err
	}
	o := options{version: v, out: *out, root: root, commit: *commit, targets: allTargets}
	if *targets != "" {
		o.targets = nil
		for _, s := range strings.Split(*targets, ",") {
			if s == "host" {
				s = runtime.GOOS + "/" + runtime.GOARCH
			}
			t, ok := findTarget(s)
			if !ok {
				return options{}, fmt.Errorf("unknown target %q; the targets are %v", s, allTargets)
			}
			o.targets = append(o.targets, t)
		}
	}
	if o.commit == "" {
		o.commit, err = git(root, "rev-parse", "HEAD")
		if err != nil {
			return options{}, fmt.Errorf("cannot read the commit (give -commit): %v", err)
		}
	}
	// The commit's time dates every archive entry, so rebuilding the same
	// commit gives the same bytes (SOURCE_DATE_EPOCH overrides it).
	stamp := os.Getenv("SOURCE_DATE_EPOCH")
	if stamp == "" {
		if stamp, err = git(root, "log", "-1", "--format=%ct", o.commit); err != nil {
			return options{}, fmt.Errorf("cannot read the commit's time (set SOURCE_DATE_EPOCH): %v", err)
		}
	}
	secs, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return options{}, fmt.Errorf("bad time %q: %v", stamp, err)
	}
	o.date = time.Unix(secs, 0).UTC()
	return o, nil
}

func findTarget(s string) (target, bool) {
	for _, t := range allTargets {
		if t.String() == s {
			return t, true
		}
	}
	return target{}, false
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// moduleRoot is the folder of this module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run it inside the mcp-sqlite-memory module")
	}
	return filepath.Dir(mod), nil
}

// run builds every target and writes the release into o.out.
func run(o options, log io.Writer) error {
	if err := os.RemoveAll(o.out); err != nil {
		return err
	}
	stage := filepath.Join(o.out, "stage")
	var archives []string
	for _, t := range o.targets {
		dir := filepath.Join(stage, t.node())
		fmt.Fprintf(log, "building %s\n", t)
		if err := build(o, t, dir); err != nil {
			return err
		}
		name, err := archive(o, t, dir)
		if err != nil {
			return err
		}
		archives = append(archives, name)
	}
	if err := checksums(o.out, archives); err != nil {
		return err
	}
	if err := npmPackages(o, stage); err != nil {
		return err
	}
	if err := bundle(o, stage); err != nil {
		return err
	}
	if err := registryEntry(o); err != nil {
		return err
	}
	// What users get is in the archives and packages; the raw builds go.
	if err := os.RemoveAll(stage); err != nil {
		return err
	}
	fmt.Fprintf(log, "release %s (commit %.12s) in %s\n", o.version, o.commit, o.out)
	return nil
}

// build compiles both binaries of t into dir, without build tags (the
// tests' hold, ipc/testhold.go, needs -tags testhold). The model-driven
// evaluation, cmd/mcp-sqlite-memory-eval, is not built: a release ships
// the server and its worker only (docs/install.md).
func build(o options, t target, dir string) error {
	ldflags := fmt.Sprintf("-s -w -X %s/version.release=%s -X %s/version.commit=%s", module, o.version, module, o.commit)
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", dir+string(filepath.Separator),
		"./cmd/"+serverName, "./cmd/"+workerName)
	cmd.Dir = o.root
	cmd.Env = append(cleanEnv(), "GOOS="+t.goos, "GOARCH="+t.goarch, "CGO_ENABLED=0", "GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %v", t, err)
	}
	return nil
}

// cleanEnv is the environment less what changes a build's bytes.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS", "GOAMD64", "GOARM64", "GOEXPERIMENT":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// entry is one file of an archive or package.
type entry struct {
	name string // slash-separated, inside the archive
	src  string // the file on disk
	exec bool
}

// archiveName is the archive of t, without its extension.
func archiveName(o options, t target) string {
	return fmt.Sprintf("%s_%s_%s_%s", serverName, o.version, t.goos, t.goarch)
}

// archive writes t's archive (tar.gz, zip for Windows) into o.out.
func archive(o options, t target, dir string) (string, error) {
	top := archiveName(o, t)
	entries := []entry{
		{top + "/" + serverName + t.exe(), filepath.Join(dir, serverName+t.exe()), true},
		{top + "/" + workerName + t.exe(), filepath.Join(dir, workerName+t.exe()), true},
		{top + "/README.md", filepath.Join(o.root, "README.md"), false},
		{top + "/LICENSE", filepath.Join(o.root, "LICENSE"), false},
	}
	if t.goos == "windows" {
		name := top + ".zip"
		return name, writeZip(filepath.Join(o.out, name), entries, o.date)
	}
	name := top + ".tar.gz"
	return name, writeTarGz(filepath.Join(o.out, name), top, entries, o.date)
}

func sorted(entries []entry) []entry {
	s := append([]entry(nil), entries...)
	sort.Slice(s, func(i, j int) bool { return s[i].name < s[j].name })
	return s
}

func mode(e entry) int64 {
	if e.exec {
		return 0o755
	}
	return 0o644
}

// writeTarGz writes entries under the folder top, each dated at date and
// owned by root, into a gzip stream with no name or time of its own.
func writeTarGz(path, top string, entries []entry, date time.Time) error {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: top + "/", Mode: 0o755, ModTime: date, Format: tar.FormatPAX}); err != nil {
		return err
	}
	for _, e := range sorted(entries) {
		data, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: mode(e), Size: int64(len(data)), ModTime: date, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeZip writes entries into a zip, each dated at date.
func writeZip(path string, entries []entry, date time.Time) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range sorted(entries) {
		data, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: date}
		h.SetMode(fs.FileMode(mode(e)))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// checksums writes SHA256SUMS, in the form sha256sum -c reads.
func checksums(dir string, names []string) error {
	names = append([]string(nil), names...)
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), n)
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// copyFile copies src to dst with perm.
func copyFile(src, dst string, perm fs.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, perm)
}

// writeJSON writes v indented, with <, > and & as they are (">=18").
func writeJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// npmPackage is the package.json the release writes.
type npmPackage struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	Description          string            `json:"description"`
	License              string            `json:"license"`
	Repository           map[string]string `json:"repository"`
	MCPName              string            `json:"mcpName,omitempty"`
	Bin                  map[string]string `json:"bin,omitempty"`
	OS                   []string          `json:"os,omitempty"`
	CPU                  []string          `json:"cpu,omitempty"`
	Files                []string          `json:"files"`
	Engines              map[string]string `json:"engines,omitempty"`
	OptionalDependencies map[string]string `json:"optionalDependencies,omitempty"`
	PreferUnplugged      bool              `json:"preferUnplugged,omitempty"`
}

// registryName is the server's name in the MCP Registry, which npm's
// mcpName must repeat for the registry to accept the package.
const registryName = "io.github.mcp-sqlite-memory/mcp-sqlite-memory"

var repository = map[string]string{"type": "git", "url": "git+https://" + module + ".git"}

// npmPackages writes the launcher package and one package per target
// under o.out/npm, ready for npm pack.
func npmPackages(o options, stage string) error {
	root := filepath.Join(o.out, "npm")
	optional := map[string]string{}
	for _, t := range o.targets {
		name := serverName + "-" + t.node()
		optional[name] = o.version
		dir := filepath.Join(root, name)
		parts := strings.SplitN(t.node(), "-", 2)
		pkg := npmPackage{
			Name: name, Version: o.version, License: "MIT", Repository: repository,
			Description:     fmt.Sprintf("The %s binaries of mcp-sqlite-memory (installed by the mcp-sqlite-memory package)", t.node()),
			OS:              []string{parts[0]},
			CPU:             []string{parts[1]},
			Files:           []string{"bin/"},
			PreferUnplugged: true,
		}
		if err := writeJSON(filepath.Join(dir, "package.json"), pkg); err != nil {
			return err
		}
		for _, b := range []string{serverName, workerName} {
			if err := copyFile(filepath.Join(stage, t.node(), b+t.exe()), filepath.Join(dir, "bin", b+t.exe()), 0o755); err != nil {
				return err
			}
		}
		if err := copyFile(filepath.Join(o.root, "LICENSE"), filepath.Join(dir, "LICENSE"), 0o644); err != nil {
			return err
		}
	}
	dir := filepath.Join(root, serverName)
	pkg := npmPackage{
		Name: serverName, Version: o.version, License: "MIT", Repository: repository, MCPName: registryName,
		Description:          "MCP server: one SQLite file with SQL as the tool, a hash-chained memory, an audit log, every statement in a sandboxed worker",
		Bin:                  map[string]string{serverName: "bin/" + serverName + ".js"},
		Files:                []string{"bin/", "README.md", "LICENSE"},
		Engines:              map[string]string{"node": ">=18"},
		OptionalDependencies: optional,
	}
	if err := writeJSON(filepath.Join(dir, "package.json"), pkg); err != nil {
		return err
	}
	for _, f := range []struct {
		src, dst string
		perm     fs.FileMode
	}{
		{"packaging/launcher.js", "bin/" + serverName + ".js", 0o755},
		{"README.md", "README.md", 0o644},
		{"LICENSE", "LICENSE", 0o644},
	} {
		if err := copyFile(filepath.Join(o.root, f.src), filepath.Join(dir, f.dst), f.perm); err != nil {
			return err
		}
	}
	return nil
}

// bundle writes the MCP Bundle's folder (o.out/mcpb), which
// `mcpb pack` turns into mcp-sqlite-memory.mcpb. It is written only when
// every OS the manifest names has its build among the targets.
func bundle(o options, stage string) error {
	var manifest map[string]any
	if err := readJSON(filepath.Join(o.root, "packaging", "manifest.json"), &manifest); err != nil {
		return err
	}
	manifest["version"] = o.version
	dir := filepath.Join(o.out, "mcpb")
	built := map[target]bool{}
	for _, t := range o.targets {
		built[t] = true
	}
	var platforms []string
	for _, osName := range []string{"darwin", "linux", "win32"} {
		t := bundleTargets[osName]
		if !built[t] {
			continue
		}
		platforms = append(platforms, osName)
		for _, b := range []string{serverName, workerName} {
			if err := copyFile(filepath.Join(stage, t.node(), b+t.exe()), filepath.Join(dir, "server", t.node(), b+t.exe()), 0o755); err != nil {
				return err
			}
		}
	}
	if len(platforms) == 0 {
		return nil
	}
	// A partial release (-targets) bundles what it built and says so.
	manifest["compatibility"] = map[string]any{"platforms": platforms}
	for _, f := range []string{"README.md", "LICENSE"} {
		if err := copyFile(filepath.Join(o.root, f), filepath.Join(dir, f), 0o644); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(dir, "manifest.json"), manifest)
}

// registryEntry writes server.json for the MCP Registry with this
// version.
func registryEntry(o options) error {
	var entry map[string]any
	if err := readJSON(filepath.Join(o.root, "packaging", "server.json"), &entry); err != nil {
		return err
	}
	entry["version"] = o.version
	for _, p := range entry["packages"].([]any) {
		p.(map[string]any)["version"] = o.version
	}
	return writeJSON(filepath.Join(o.out, "server.json"), entry)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}
