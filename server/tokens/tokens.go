// Package tokens keeps the agents' bearer tokens of the HTTP transport in
// one file: for each agent its name, the SHA-256 of its token and when it
// was made. The token itself is shown once, by Add, and never stored.
//
// The file is a text file, one token a line ("name sha256hex created
// [scopes]"; a line without scopes has all three, as every token had
// before scopes, and a token with all three is written without them, so
// that older servers keep reading the file),
// written whole under a temporary name and renamed, mode 0600. A Set
// re-reads it when it changes, so a revoked token stops working without a
// restart; a file that others may read or write is refused, and so is a
// symbolic link in its place: the file is opened without following one
// (open_unix.go, open_windows.go), and its mode is checked on the opened
// file, not on the name.
//
// Imports: server/scopes.
package tokens

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/scopes"
)

// Entry is one agent's token as the file keeps it.
type Entry struct {
	Name    string
	Hash    [sha256.Size]byte
	Created time.Time
	// Scopes are what the token may do (package scopes), in scopes.All's
	// order.
	Scopes []string
}

// Prefix starts every token, so that a leaked one is easy to recognise
// (secret scanners, logs).
const Prefix = "msm_"

// tokenBytes is the random part of a token: 256 bits.
const tokenBytes = 32

const header = "# mcp-sqlite-memory agent tokens (mcp-sqlite-memory token add|list|revoke): name, sha256 of the token, created (UTC)\n"

// validName is what an agent may be called: it ends up inside the memory's
// session column (SPEC 11) and in logs, so nothing that needs quoting.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckName explains a name that cannot be an agent's.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("agent name %q must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Hash is the SHA-256 of a token, as the file stores it.
func Hash(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// Read parses the file at path. A missing file is an empty list, not an
// error, for Add; the server checks the file exists (Open). A symbolic
// link or anything but a regular file is refused.
func Read(path string) ([]Entry, error) {
	data, _, err := readFile(path, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parse(data, path)
}

// maxFileBytes bounds what is read of the file: a million tokens' lines.
const maxFileBytes = 128 << 20

// readFile reads path without following a symbolic link and checks what
// it opened: a regular file and, with private, one that only its owner
// may read or write. The checks are on the open descriptor, so the file
// read is the file checked.
func readFile(path string, private bool) ([]byte, os.FileInfo, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", path)
	}
	if private {
		if err := modeProblem(path, fi.Mode()); err != nil {
			return nil, nil, err
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > maxFileBytes {
		return nil, nil, fmt.Errorf("%s is larger than %d MiB: not a token file", path, maxFileBytes>>20)
	}
	return data, fi, nil
}

// symlinkError explains a symbolic link where the token file should be.
func symlinkError(path string) error {
	to := ""
	if target, err := os.Readlink(path); err == nil {
		to = " (to " + target + ")"
	}
	return fmt.Errorf("%s is a symbolic link%s: the token file is opened without following links, so that whoever may change a link cannot choose the tokens; point --auth-tokens at the file itself", path, to)
}

func parse(data []byte, path string) ([]Entry, error) {
	var out []Entry
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 && len(f) != 4 {
			return nil, fmt.Errorf("%s line %d: want \"name sha256 created [scopes]\", got %d fields", path, n, len(f))
		}
		var e Entry
		e.Name = f[0]
		if err := CheckName(e.Name); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", path, n, err)
		}
		h, err := hex.DecodeString(f[1])
		if err != nil || len(h) != sha256.Size {
			return nil, fmt.Errorf("%s line %d: the hash must be 64 hex digits", path, n)
		}
		copy(e.Hash[:], h)
		if e.Created, err = time.Parse(time.RFC3339, f[2]); err != nil {
			return nil, fmt.Errorf("%s line %d: bad creation time %q", path, n, f[2])
		}
		e.Scopes = scopes.All
		if len(f) == 4 {
			if e.Scopes, err = scopes.Parse(f[3]); err != nil {
				return nil, fmt.Errorf("%s line %d: %v", path, n, err)
			}
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("%s line %d: agent %q appears twice", path, n, e.Name)
		}
		seen[e.Name] = true
		out = append(out, e)
	}
	return out, sc.Err()
}

// write replaces the file with entries: a temporary file beside it (0600
// from its creation), synced, renamed over it.
func write(path string, entries []Entry) error {
	var b strings.Builder
	b.WriteString(header)
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %s %s", e.Name, hex.EncodeToString(e.Hash[:]), e.Created.UTC().Format(time.RFC3339))
		if e.Scopes != nil && !slices.Equal(e.Scopes, scopes.All) {
			b.WriteString(" " + strings.Join(e.Scopes, ","))
		}
		b.WriteString("\n")
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename there is nothing left to remove
	if err := f.Chmod(0o600); err != nil && !chmodUnsupported {
		f.Close()
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Add makes a new random token for name, stores its hash and returns it.
// A name already present is refused: revoke it first.
func Add(path, name string, now time.Time) (string, error) {
	return AddScoped(path, name, scopes.All, now)
}

// AddScoped is Add for a token that may do only what granted allows
// (scopes.Parse's result).
func AddScoped(path, name string, granted []string, now time.Time) (string, error) {
	granted = scopes.Known(granted)
	if len(granted) == 0 {
		return "", fmt.Errorf("a token needs at least one of the scopes %s", strings.Join(scopes.All, ", "))
	}
	if err := CheckName(name); err != nil {
		return "", err
	}
	if err := PermProblem(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	entries, err := Read(path)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Name == name {
			return "", fmt.Errorf("agent %q already has a token (made %s); revoke it first: mcp-sqlite-memory token revoke %s --auth-tokens %s", name, e.Created.Format(time.RFC3339), name, path)
		}
	}
	var raw [tokenBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	token := Prefix + base64.RawURLEncoding.EncodeToString(raw[:])
	entries = append(entries, Entry{Name: name, Hash: Hash(token), Created: now.UTC().Truncate(time.Second), Scopes: granted})
	if err := write(path, entries); err != nil {
		return "", err
	}
	return token, nil
}

// Revoke removes name's token. It reports whether there was one.
func Revoke(path, name string) (bool, error) {
	entries, err := Read(path)
	if err != nil {
		return false, err
	}
	kept := entries[:0]
	for _, e := range entries {
		if e.Name != name {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(entries) {
		return false, nil
	}
	return true, write(path, kept)
}

// SetScopes changes what name's token may do. It reports whether there
// was one. A running server sees the change at its next request.
func SetScopes(path, name string, granted []string) (bool, error) {
	granted = scopes.Known(granted)
	if len(granted) == 0 {
		return false, fmt.Errorf("a token needs at least one of the scopes %s", strings.Join(scopes.All, ", "))
	}
	if err := PermProblem(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	entries, err := Read(path)
	if err != nil {
		return false, err
	}
	for i := range entries {
		if entries[i].Name == name {
			entries[i].Scopes = granted
			return true, write(path, entries)
		}
	}
	return false, nil
}

// List returns the entries sorted by name.
func List(path string) ([]Entry, error) {
	entries, err := Read(path)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return entries, err
}

// PermProblem explains a token file others may read or write (or one that
// is a symbolic link, or not a regular file). nil when the file is private
// to its owner, or where the platform has no such mode bits (see
// perm_windows.go).
func PermProblem(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return symlinkError(path)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	return modeProblem(path, fi.Mode())
}

// Set is the token file as the server reads it: looked up on every
// request, re-read when its size, time, mode or identity changes (an
// lstat per request; the file is small).
type Set struct {
	path string

	mu      sync.Mutex
	stamp   stamp
	entries []Entry
	err     error // why the file last failed to load: every lookup fails
}

type stamp struct {
	size int64
	mod  time.Time
	mode os.FileMode
	fi   os.FileInfo
}

func (a stamp) same(b stamp) bool {
	return a.fi != nil && b.fi != nil && a.size == b.size && a.mod.Equal(b.mod) && a.mode == b.mode && os.SameFile(a.fi, b.fi)
}

// Open loads the file for the server: it must exist, be private to its
// owner and hold at least one token.
func Open(path string) (*Set, error) {
	s := &Set{path: path}
	if err := s.reload(); err != nil {
		return nil, err
	}
	if len(s.entries) == 0 {
		return nil, fmt.Errorf("%s holds no token; make one: mcp-sqlite-memory token add NAME --auth-tokens %s", path, path)
	}
	return s, nil
}

// Path is the file's path.
func (s *Set) Path() string { return s.path }

// reload re-reads the file if it changed since the last read. The stamp
// is the name's own (lstat): a link put in the file's place is a change,
// and is refused by the read. Callers hold s.mu, or own s alone.
func (s *Set) reload() error {
	fi, err := os.Lstat(s.path)
	if err != nil {
		s.entries, s.err, s.stamp = nil, err, stamp{}
		return err
	}
	st := stamp{size: fi.Size(), mod: fi.ModTime(), mode: fi.Mode(), fi: fi}
	if st.same(s.stamp) {
		return s.err
	}
	s.stamp = st
	data, _, err := readFile(s.path, true)
	if err != nil {
		s.entries, s.err = nil, err
		return err
	}
	entries, err := parse(data, s.path)
	if err != nil {
		s.entries, s.err = nil, err
		return err
	}
	s.entries, s.err = entries, nil
	return nil
}

// Entries re-reads the file if it changed and returns its entries, or why
// it cannot be used (then no token is valid).
func (s *Set) Entries() ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(); err != nil {
		return nil, err
	}
	return slices.Clone(s.entries), nil
}

// Lookup returns the agent whose token this is. It re-reads the file first
// if it changed; a file that became unreadable or unsafe fails every
// lookup (err says why) until it is fixed. The comparison of hashes is in
// constant time and visits every entry.
func (s *Set) Lookup(token string) (name string, ok bool, err error) {
	e, ok, err := s.Find(token)
	return e.Name, ok, err
}

// Find is Lookup returning the whole entry (the token's scopes too).
func (s *Set) Find(token string) (e Entry, ok bool, err error) {
	h := Hash(token)
	s.mu.Lock()
	reloadErr := s.reload()
	entries := s.entries
	s.mu.Unlock()
	if reloadErr != nil {
		return Entry{}, false, reloadErr
	}
	found := -1
	for i := range entries {
		if subtle.ConstantTimeCompare(h[:], entries[i].Hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Entry{}, false, nil
	}
	return entries[found], true, nil
}
