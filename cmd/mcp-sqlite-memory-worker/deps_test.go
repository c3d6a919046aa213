package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Go runs the init of every package a binary links before main, whatever
// the program then does: each package the worker links is paid for by
// every statement. These tests keep the worker's import graph to what it
// uses.

// forbidden are packages a worker never needs; each one seen fails the
// test with its import chain. A pattern ending in "/" matches every
// package under it; any other matches exactly.
var forbidden = []string{
	"github.com/mark3labs/",            // the MCP library: the front's job
	"github.com/santhosh-tekuri/",      // mcp-go's JSON-schema compiler (the costliest init of the server)
	"github.com/google/jsonschema-go/", // ditto
	"github.com/spf13/",                // mcp-go's helpers
	"github.com/yosida95/",             // ditto
	"golang.org/x/text/",               // ditto
	"modernc.org/sqlite",               // the database/sql driver; the worker uses rawsqlite over sqlite/lib
	"database/sql",                     // ditto
	"net/http",                         // no HTTP client or server in a worker
	"net/http/",                        //
	"net/url",                          //
	"net/rpc",                          //
	"crypto/tls",                       //
	"crypto/x509",                      //
	"html/template",                    //
	"text/template",                    //
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server",
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/replicate", // Litestream and its guard: the front's job
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cli",
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval",
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory",
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb",
}

// allowedModules are the only packages outside the standard library the
// worker may link. A new one must be added here on purpose, with the init
// cost it adds (GODEBUG=inittrace=1) in mind.
var allowedModules = []string{
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/",
	"github.com/hashicorp/go-hclog", // logs to the front
	"github.com/fatih/color",        // go-hclog
	"github.com/mattn/go-isatty",    // go-hclog
	"github.com/mattn/go-colorable", // go-hclog
	"golang.org/x/sys/",             // rlimits, Landlock, Job Objects
	"modernc.org/libc",              // SQLite's C runtime
	"modernc.org/libc/",             //
	"modernc.org/sqlite/lib",        // SQLite itself
	"modernc.org/mathutil",          // modernc.org/libc
	"modernc.org/memory",            // modernc.org/libc
	"github.com/google/uuid",        // modernc.org/libc (uuid_generate); it links package net, and with it cgo
	"github.com/dustin/go-humanize", // modernc.org/libc
	"github.com/remyoudompheng/bigfft",
	"github.com/ncruces/go-strftime", // modernc.org/libc on some platforms
}

// netImporters are the only packages allowed to import package net: it
// comes in through modernc.org/libc's uuid_generate (and on Windows through
// x/sys/windows), and nothing of the worker's own may add another way in.
// Package net is what makes a default (cgo-enabled) build of the worker a
// cgo binary, which must re-execute itself to confine all its threads.
var netImporters = []string{"github.com/google/uuid", "golang.org/x/sys/windows"}

type pkg struct {
	path    string
	imports []string
}

const (
	workerMain = "github.com/mcp-sqlite-memory/mcp-sqlite-memory/cmd/mcp-sqlite-memory-worker"
	serverPkg  = "github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
	workerPkg  = "github.com/mcp-sqlite-memory/mcp-sqlite-memory/worker"
)

// deps lists the worker's packages for goos with their imports.
func deps(t *testing.T, goos string) map[string]pkg {
	return depsOf(t, goos, ".")
}

// depsOf lists the packages pattern links for goos, with their imports.
func depsOf(t *testing.T, goos, pattern string) map[string]pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	cmd := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pattern)
	cmd.Env = append(os.Environ(), "GOOS="+goos)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	m := map[string]pkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		m[f[0]] = pkg{path: f[0], imports: f[1:]}
	}
	return m
}

// chain is one import path from the worker's main package to target.
func chain(m map[string]pkg, target string) string { return chainFrom(m, workerMain, target) }

// chainFrom is one import path from the package from to target.
func chainFrom(m map[string]pkg, from, target string) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == target {
			var path []string
			for ; p != ""; p = prev[p] {
				path = append(path, p)
			}
			slices.Reverse(path)
			return strings.Join(path, " -> ")
		}
		for _, imp := range m[p].imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return target
}

func matches(path string, patterns []string) bool {
	for _, p := range patterns {
		if path == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return true
		}
	}
	return false
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func TestWorkerLinksOnlyWhatItUses(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		t.Run(goos, func(t *testing.T) {
			m := deps(t, goos)
			if len(m) < 10 {
				t.Fatalf("go list found only %d packages; is this the worker's folder?", len(m))
			}
			for path := range m {
				switch {
				case matches(path, forbidden):
					t.Errorf("the worker links %s, which it does not use:\n  %s", path, chain(m, path))
				case !isStd(path) && !matches(path, allowedModules):
					t.Errorf("the worker links %s, a package outside its allowed list; if it is needed, add it to allowedModules (and measure its init with GODEBUG=inittrace=1):\n  %s", path, chain(m, path))
				}
				if slices.Contains(m[path].imports, "net") && !matches(path, netImporters) {
					t.Errorf("%s imports package net; only %v may:\n  %s", path, netImporters, chain(m, path))
				}
			}
		})
	}
}

// TestForbiddenListCatchesTheServer makes sure the check above can fail:
// the server's own import graph breaks every rule it sets.
func TestForbiddenListCatchesTheServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "../mcp-sqlite-memory").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var caught []string
	for _, path := range strings.Fields(string(out)) {
		if matches(path, forbidden) {
			caught = append(caught, path)
		}
	}
	for _, want := range []string{"github.com/mark3labs/mcp-go/server", "net/http", "github.com/santhosh-tekuri/jsonschema/v6"} {
		if !slices.Contains(caught, want) {
			t.Errorf("the forbidden list does not catch %s in the server's graph (caught %d packages)", want, len(caught))
		}
	}
}

// TestServerDoesNotLinkWorker: the front and the worker share the contract
// in ipc (the worker's environment, the snapshot file names) and the rules
// in policy, never each other's code.
func TestServerDoesNotLinkWorker(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		t.Run(goos, func(t *testing.T) {
			m := depsOf(t, goos, "../../server")
			if _, ok := m[serverPkg]; !ok {
				t.Fatalf("go list did not list the server package (%d packages)", len(m))
			}
			if _, ok := m[workerPkg]; ok {
				t.Errorf("the server links the worker package:\n  %s", chainFrom(m, serverPkg, workerPkg))
			}
		})
	}
}
