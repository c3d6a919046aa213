package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestTargetNames(t *testing.T) {
	tests := []struct {
		t          target
		node, exe  string
		archiveExt string
	}{
		{target{"linux", "amd64"}, "linux-x64", "", ".tar.gz"},
		{target{"linux", "arm64"}, "linux-arm64", "", ".tar.gz"},
		{target{"darwin", "amd64"}, "darwin-x64", "", ".tar.gz"},
		{target{"darwin", "arm64"}, "darwin-arm64", "", ".tar.gz"},
		{target{"windows", "amd64"}, "win32-x64", ".exe", ".zip"},
		{target{"windows", "arm64"}, "win32-arm64", ".exe", ".zip"},
	}
	if len(tests) != len(allTargets) {
		t.Fatalf("%d targets tested, %d released", len(tests), len(allTargets))
	}
	for _, tt := range tests {
		if got := tt.t.node(); got != tt.node {
			t.Errorf("%v.node() = %q, want %q", tt.t, got, tt.node)
		}
		if got := tt.t.exe(); got != tt.exe {
			t.Errorf("%v.exe() = %q, want %q", tt.t, got, tt.exe)
		}
	}
	// The launcher's list of supported platforms is the release's.
	js, err := os.ReadFile("../../packaging/launcher.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		if !bytes.Contains(js, []byte("'"+tt.node+"'")) {
			t.Errorf("packaging/launcher.js does not list %s", tt.node)
		}
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
		version string
		targets int
	}{
		{args: []string{"0.4.0"}, version: "0.4.0", targets: 6},
		{args: []string{"v0.4.0-rc.1"}, version: "0.4.0-rc.1", targets: 6},
		{args: []string{"-targets", "linux/amd64,windows/arm64", "1.0.0"}, version: "1.0.0", targets: 2},
		{args: []string{"-targets", "host", "1.0.0"}, version: "1.0.0", targets: 1},
		{args: []string{"latest"}, wantErr: "not a semantic version"},
		{args: []string{"1.0"}, wantErr: "not a semantic version"},
		{args: []string{}, wantErr: "usage: release"},
		{args: []string{"-targets", "plan9/386", "1.0.0"}, wantErr: `unknown target "plan9/386"`},
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1764633600")
	for _, tt := range tests {
		o, err := parseArgs(append([]string{"-commit", "066bc1c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7"}, tt.args...))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if o.version != tt.version || len(o.targets) != tt.targets || !o.date.Equal(time.Unix(1764633600, 0)) {
			t.Errorf("%v: version %q, %d targets, date %v", tt.args, o.version, len(o.targets), o.date)
		}
	}
}

// stageFiles writes a fake binary pair, README and LICENSE.
func stageFiles(t *testing.T) []entry {
	dir := t.TempDir()
	files := []entry{
		{"p/mcp-sqlite-memory", "server", true},
		{"p/mcp-sqlite-memory-worker", "worker", true},
		{"p/README.md", "README.md", false},
		{"p/LICENSE", "LICENSE", false},
	}
	for i, f := range files {
		path := filepath.Join(dir, f.src)
		if err := os.WriteFile(path, bytes.Repeat([]byte(f.src), 1000+i), 0o600); err != nil {
			t.Fatal(err)
		}
		files[i].src = path
	}
	return files
}

// TestArchivesAreReproducible: the same files give the same archive bytes,
// whatever the files' own times and modes on disk, and every entry is
// dated at the release's date with the mode the release gives it.
func TestArchivesAreReproducible(t *testing.T) {
	date := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	entries := stageFiles(t)
	out := t.TempDir()
	write := func(name string, touch time.Time) []byte {
		for _, e := range entries {
			if err := os.Chtimes(e.src, touch, touch); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(out, name)
		var err error
		if strings.HasSuffix(name, ".zip") {
			err = writeZip(path, entries, date)
		} else {
			err = writeTarGz(path, "p", entries, date)
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, ext := range []string{".tar.gz", ".zip"} {
		a := write("a"+ext, time.Now())
		b := write("b"+ext, time.Now().Add(-time.Hour))
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: two archives of the same files differ", ext)
		}
		got := listArchive(t, ext, a)
		want := map[string]string{
			"p/mcp-sqlite-memory": "-rwxr-xr-x", "p/mcp-sqlite-memory-worker": "-rwxr-xr-x",
			"p/README.md": "-rw-r--r--", "p/LICENSE": "-rw-r--r--",
		}
		for name, m := range want {
			e, ok := got[name]
			if !ok {
				t.Errorf("%s: %s missing (have %v)", ext, name, got)
				continue
			}
			if e.mode != m || !e.time.Equal(date) {
				t.Errorf("%s: %s mode %s time %v, want %s %v", ext, name, e.mode, e.time, m, date)
			}
		}
	}
}

type listed struct {
	mode string
	time time.Time
}

func listArchive(t *testing.T, ext string, data []byte) map[string]listed {
	got := map[string]listed{}
	if ext == ".zip" {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			got[f.Name] = listed{f.Mode().String(), f.Modified.UTC()}
		}
		return got
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !gz.ModTime.IsZero() || gz.Name != "" {
		t.Errorf("gzip header carries name %q time %v", gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s owned by %d/%d %q/%q", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if h.Typeflag == tar.TypeReg {
			got[h.Name] = listed{h.FileInfo().Mode().String(), h.ModTime.UTC()}
		}
	}
	return got
}

func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"b.zip": "bb", "a.tar.gz": "aa"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := checksums(dir, []string{"b.zip", "a.tar.gz"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	want := "961b6dd3ede3cb8ecbaacbd68de040cd78eb2ed5889130cceb4c49268ea4d506  a.tar.gz\n" +
		"3b64db95cb55c763391c707108489ae18b4112d783300de38e033b4c98c3deaf  b.zip\n"
	if string(got) != want {
		t.Fatalf("SHA256SUMS:\n%s\nwant:\n%s", got, want)
	}
}

// TestRegistryEntryIsValid: the server.json a release writes validates
// against the MCP Registry's published schema (2025-12-11, kept in
// packaging/testdata), names the npm package the release makes, at the
// release's version, and lists only environment variables the server reads.
func TestRegistryEntryIsValid(t *testing.T) {
	o := options{version: "0.4.0", root: "../..", out: t.TempDir()}
	if err := registryEntry(o); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	schema, err := c.Compile("../../packaging/testdata/server.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(o.out, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("server.json does not validate: %v", err)
	}
	var entry struct {
		Name     string
		Version  string
		Packages []struct {
			RegistryType, Identifier, Version string
			Transport                         struct{ Type string }
			EnvironmentVariables              []struct{ Name string }
		}
	}
	data, _ := os.ReadFile(filepath.Join(o.out, "server.json"))
	if err := json.Unmarshal(data, &entry); err != nil {
		t.Fatal(err)
	}
	if entry.Name != registryName || entry.Version != "0.4.0" || len(entry.Packages) != 1 {
		t.Fatalf("entry %+v", entry)
	}
	p := entry.Packages[0]
	if p.RegistryType != "npm" || p.Identifier != serverName || p.Version != "0.4.0" || p.Transport.Type != "stdio" {
		t.Fatalf("package %+v", p)
	}
	config, err := os.ReadFile("../../config/config.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range p.EnvironmentVariables {
		if !bytes.Contains(config, []byte(`"`+v.Name+`"`)) {
			t.Errorf("server.json lists %s, which config/config.go does not read", v.Name)
		}
	}
	// A schema that accepts anything would prove nothing.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"name":"no-slash","description":"x","version":"1"}`))
	if schema.Validate(bad) == nil {
		t.Fatal("the schema accepted a name without a namespace")
	}
}

// TestBundleManifest: the bundle's manifest runs the binaries the bundle
// carries, per OS, and passes the user's settings as the server's flags.
func TestBundleManifest(t *testing.T) {
	var m struct {
		ManifestVersion string `json:"manifest_version"`
		Server          struct {
			Type       string `json:"type"`
			EntryPoint string `json:"entry_point"`
			MCPConfig  struct {
				Command           string                              `json:"command"`
				Args              []string                            `json:"args"`
				PlatformOverrides map[string]struct{ Command string } `json:"platform_overrides"`
			} `json:"mcp_config"`
		} `json:"server"`
		UserConfig map[string]struct {
			Type    string `json:"type"`
			Default any    `json:"default"`
		} `json:"user_config"`
	}
	if err := readJSON("../../packaging/manifest.json", &m); err != nil {
		t.Fatal(err)
	}
	commands := map[string]string{"linux": m.Server.MCPConfig.Command}
	for osName, o := range m.Server.MCPConfig.PlatformOverrides {
		commands[osName] = o.Command
	}
	for osName, tgt := range bundleTargets {
		want := "${__dirname}/server/" + tgt.node() + "/" + serverName + tgt.exe()
		if commands[osName] != want {
			t.Errorf("%s runs %q, want %q", osName, commands[osName], want)
		}
	}
	args := strings.Join(m.Server.MCPConfig.Args, " ")
	for key := range m.UserConfig {
		if !strings.Contains(args, "${user_config."+key+"}") {
			t.Errorf("user_config %s is never passed to the server (args %q)", key, args)
		}
	}
	config, err := os.ReadFile("../../config/config.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range m.Server.MCPConfig.Args {
		if strings.HasPrefix(a, "--") && !bytes.Contains(config, []byte(`"`+strings.TrimPrefix(a, "--")+`"`)) {
			t.Errorf("the manifest passes %s, which the server does not take", a)
		}
	}
}
