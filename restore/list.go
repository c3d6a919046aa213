package restore

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// futureSkew is how far in the future a snapshot's name may be dated
// (clocks of two machines sharing a folder differ a little).
const futureSkew = time.Minute

// listed is one snapshot file of the database, as restore lists it.
type listed struct {
	name, path string
	taken      time.Time
	size       int64
	kind       string // kindFull, kindUndo, or "" when it does not open as a SQLite snapshot
	// From the audit row of the call that wrote it; auditID 0 when no
	// audit row of the database names the file.
	auditID            int64
	tool, stmt, reason string
}

// proposable is the rule for the "Try:" line (docs/snapshots.md): a file
// is proposed only when the database's own audit log says the server
// wrote it (a destructive_query, snapshot or restore row whose detail
// names this path), its name parses as a snapshot name dated no later
// than a minute from now, and it opens as a SQLite snapshot or undo
// record. A file planted in the folder, however it is named, is listed
// but never proposed.
func (l listed) proposable(now time.Time) bool {
	return l.auditID > 0 && l.kind != "" && !l.taken.After(now.Add(futureSkew))
}

// why is what keeps l from being proposed ("" when nothing does).
func (l listed) why(now time.Time) string {
	var parts []string
	if l.auditID == 0 {
		parts = append(parts, "no audit row of the database names it, so the server did not write it")
	}
	if l.taken.After(now.Add(futureSkew)) {
		parts = append(parts, "its name is dated in the future")
	}
	if l.kind == "" {
		parts = append(parts, "it does not open as a SQLite snapshot")
	}
	return strings.Join(parts, "; ")
}

// snapshotTime is the time in a snapshot's name <stem>.<stamp>Z<tag>.db.
func snapshotTime(name, stem string) (time.Time, bool) {
	rest := strings.TrimPrefix(name, stem+".")
	stamp, _, ok := strings.Cut(rest, "Z")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse("20060102T150405.000", stamp)
	return t, err == nil
}

// listSnapshots lists the snapshots of db in dir: those the audit log
// names first, newest audit row first, then the others, newest name first.
func listSnapshots(db, dir string) []listed {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	st := stem(db)
	var out []listed
	for _, e := range entries {
		if !e.Type().IsRegular() || !snapshot.IsName(e.Name(), st) {
			continue
		}
		l := listed{name: e.Name(), path: filepath.Join(dir, e.Name())}
		l.taken, _ = snapshotTime(e.Name(), st)
		if fi, err := e.Info(); err == nil {
			l.size = fi.Size()
		}
		l.kind = snapshotKind(l.path)
		out = append(out, l)
	}
	audited(db, out)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.auditID > 0) != (b.auditID > 0) {
			return a.auditID > 0
		}
		if a.auditID != b.auditID {
			return a.auditID > b.auditID
		}
		return a.name > b.name
	})
	return out
}

// snapshotKind tells what the file at path is, reading it as an immutable
// file ("" when it is not a SQLite database with tables).
func snapshotKind(path string) string {
	c, err := rawsqlite.OpenImmutable(path)
	if err != nil {
		return ""
	}
	defer c.Close()
	k, err := kindOf(c, path)
	if err != nil {
		return ""
	}
	return k
}

// audited fills in, from the database's audit log, which call wrote each
// listed file. The database is only read, through SQLite, before the
// restore takes its lock descriptor.
func audited(db string, ls []listed) {
	if len(ls) == 0 {
		return
	}
	if _, err := os.Stat(db); err != nil {
		return
	}
	c, err := rawsqlite.Open(db, rawsqlite.ReadOnly)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.BusyTimeout(time.Second)
	byPath := map[string]int{}
	for i, l := range ls {
		byPath[l.path] = i
	}
	// A restore's own row names the file it restored from; the file it
	// wrote is its safety snapshot.
	const q = `SELECT id, tool, coalesce(query, ''), coalesce(json_extract(detail, '$.reason'), ''),
		CASE WHEN tool = 'restore' THEN json_extract(detail, '$.safety_snapshot') ELSE json_extract(detail, '$.snapshot') END AS path
		FROM query_log WHERE ok = 1 AND json_valid(detail) AND path IS NOT NULL AND path <> '' ORDER BY id DESC LIMIT 10000`
	// A read error ends the reading: the rows read before it count, and
	// files no row names stay unaudited.
	_ = c.Each(q, func(st *rawsqlite.Stmt) error {
		i, ok := byPath[filepath.Clean(st.ColumnText(4))]
		if !ok || ls[i].auditID != 0 {
			return nil
		}
		ls[i].auditID = st.ColumnInt64(0)
		ls[i].tool, ls[i].stmt, ls[i].reason = st.ColumnText(1), st.ColumnText(2), st.ColumnText(3)
		return nil
	})
}

// sizeText is n bytes for a person.
func sizeText(n int64) string {
	switch {
	case n < 10<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 10<<20:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// short is an agent's or a record's text on one line, escaped and cut.
func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "..."
	}
	return snapshot.Printable(s)
}

// line describes l for the listing.
func (l listed) line(now time.Time) string {
	kind := "full copy"
	switch l.kind {
	case kindUndo:
		kind = "undo record"
	case "":
		kind = "not a snapshot"
	}
	s := fmt.Sprintf("  %s  %s, %s", snapshot.Printable(l.name), kind, sizeText(l.size))
	if l.auditID > 0 {
		s += ", by " + snapshot.Printable(l.tool)
		if l.stmt != "" && l.stmt != l.reason { // the snapshot tool's query is its reason
			s += ": " + short(l.stmt, 80)
		}
		if l.reason != "" {
			s += " (reason: " + short(l.reason, 60) + ")"
		}
	}
	if why := l.why(now); why != "" {
		s += "; not proposed: " + why
	}
	return s
}

// newestHint lists the snapshots of the database in dir (or the snapshot
// folder), newest first, each with its kind, size and the call that wrote
// it, and proposes the newest the server wrote (see proposable).
func newestHint(o Options, dir string) string {
	ls := listSnapshots(o.DB, dir)
	if len(ls) == 0 && dir != o.SnapshotDir {
		dir = o.SnapshotDir
		ls = listSnapshots(o.DB, dir)
	}
	if len(ls) == 0 {
		return fmt.Sprintf("; %s holds no snapshots of %s (destructive_query and the snapshot tool write them there)", dir, filepath.Base(o.DB))
	}
	now := time.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "; the newest in %s are:", dir)
	var try string
	for i, l := range ls {
		if i < 10 {
			b.WriteString("\n" + l.line(now))
		}
		if try == "" && l.proposable(now) {
			try = l.path
		}
	}
	if len(ls) > 10 {
		fmt.Fprintf(&b, "\n  ... and %d more", len(ls)-10)
	}
	if try == "" {
		b.WriteString("\nnone of them is proposed: the audit log of the database names none that is there")
		return b.String()
	}
	fmt.Fprintf(&b, "\nTry: mcp-sqlite-memory restore --db %s %s", o.DB, try)
	return b.String()
}

// ListSnapshots is the listing restore prints when no snapshot is named:
// the snapshots of db in dir (default <db dir>/<stem>.snapshots).
func ListSnapshots(db, dir string) (string, error) {
	o := Options{DB: db, SnapshotDir: dir}
	var err error
	if o.DB, err = filepath.Abs(o.DB); err != nil {
		return "", err
	}
	if o.SnapshotDir == "" {
		o.SnapshotDir = filepath.Join(filepath.Dir(o.DB), stem(o.DB)+".snapshots")
	}
	if o.SnapshotDir, err = filepath.Abs(o.SnapshotDir); err != nil {
		return "", err
	}
	return "snapshots of " + o.DB + strings.TrimPrefix(newestHint(o, o.SnapshotDir), ";"), nil
}
