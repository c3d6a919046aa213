package restore

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// snapSchema is the name the snapshot is attached under.
const snapSchema = "snap"

// tableRows is one table's rows now and in the snapshot.
type tableRows struct {
	Name          string
	Now, Snap     int64
	InNow, InSnap bool
}

// discard is what a whole-file restore drops of a server table: the rows
// newer than the snapshot's newest.
type discard struct {
	Table       string
	N           int64
	First, Last int64
}

// Plan is what a restore changes, printed before it does.
type Plan struct {
	Everything bool
	// Tables are the agent's tables (virtual ones too), by name.
	Tables []tableRows
	// Added, Removed and Changed are the agent's other objects ("view v",
	// "index i", "trigger t"), and tables whose definition differs.
	Added, Removed, Changed []string
	// Server are the server's tables: kept as they are, unless Everything.
	Server []tableRows
	// Discards are set with Everything.
	Discards []discard
}

// serverTables are the server tables whose rows the plan shows.
var serverTables = []string{memory.TableEvents, memory.TableCheckpoints, memory.TableQueryLog}

// makePlan compares the current schema (cur, "main") with the snapshot's
// (snap), reading row counts through q, which sees both.
func makePlan(ctx context.Context, q querier, cur, snap *catalog, everything bool) (*Plan, error) {
	p := &Plan{Everything: everything}
	seen := map[string]bool{}
	for _, c := range []*catalog{cur, snap} {
		for _, o := range c.agent("table") {
			key := rawsqlite.FoldName(o.name)
			if o.list == "shadow" || seen[key] {
				continue
			}
			seen[key] = true
			t := tableRows{Name: o.name}
			var err error
			if co, ok := cur.find(o.name); ok && !co.server && co.typ == "table" {
				t.InNow = true
				if t.Now, err = count(ctx, q, "main", o.name); err != nil {
					return nil, err
				}
			}
			if so, ok := snap.find(o.name); ok && !so.server && so.typ == "table" {
				t.InSnap = true
				if t.Snap, err = count(ctx, q, snapSchema, o.name); err != nil {
					return nil, err
				}
				if co, ok := cur.find(o.name); ok && t.InNow && co.sql != so.sql {
					p.Changed = append(p.Changed, "table "+o.name)
				}
			}
			p.Tables = append(p.Tables, t)
		}
	}
	for _, o := range snap.agent("") {
		if o.typ == "table" || o.sql == "" {
			continue
		}
		if co, ok := cur.find(o.name); !ok || co.server || co.typ != o.typ {
			p.Added = append(p.Added, o.label())
		} else if co.sql != o.sql {
			p.Changed = append(p.Changed, o.label())
		}
	}
	for _, o := range cur.agent("") {
		if o.typ == "table" || o.sql == "" {
			continue
		}
		if so, ok := snap.find(o.name); !ok || so.server || so.typ != o.typ {
			p.Removed = append(p.Removed, o.label())
		}
	}
	for _, name := range serverTables {
		t := tableRows{Name: name, InNow: cur.has(name), InSnap: snap.has(name)}
		var err error
		if t.InNow {
			if t.Now, err = count(ctx, q, "main", name); err != nil {
				return nil, err
			}
		}
		if t.InSnap {
			if t.Snap, err = count(ctx, q, snapSchema, name); err != nil {
				return nil, err
			}
		}
		p.Server = append(p.Server, t)
		if everything && t.InNow {
			d, err := newer(ctx, q, name, t.InSnap)
			if err != nil {
				return nil, err
			}
			if d.N > 0 {
				p.Discards = append(p.Discards, d)
			}
		}
	}
	return p, nil
}

// newer counts the rows of the server table name that are newer (higher
// id) than the snapshot's newest.
func newer(ctx context.Context, q querier, name string, inSnap bool) (discard, error) {
	d := discard{Table: name}
	since := "0"
	if inSnap {
		since = "(SELECT coalesce(max(id), 0) FROM " + snapSchema + "." + rawsqlite.QuoteIdent(name) + ")"
	}
	err := q.QueryRowContext(ctx, "SELECT count(*), coalesce(min(id), 0), coalesce(max(id), 0) FROM main."+rawsqlite.QuoteIdent(name)+" WHERE id > "+since).Scan(&d.N, &d.First, &d.Last)
	if err != nil {
		return d, fmt.Errorf("count the newer rows of %s: %w", name, err)
	}
	return d, nil
}

// rowsWord is "1 row" or "N rows".
func rowsWord(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// write prints the plan for a person.
func (p *Plan) write(w io.Writer) {
	if len(p.Tables) > 0 {
		fmt.Fprintln(w, "agent tables (rows now -> in the snapshot):")
	} else {
		fmt.Fprintln(w, "agent tables: none, now or in the snapshot")
	}
	for _, t := range p.Tables {
		switch {
		case t.InNow && t.InSnap:
			fmt.Fprintf(w, "  %s: %d -> %d, replaced\n", t.Name, t.Now, t.Snap)
		case t.InNow:
			fmt.Fprintf(w, "  %s: %d -> not in the snapshot, removed\n", t.Name, t.Now)
		default:
			fmt.Fprintf(w, "  %s: not there now -> %d, added\n", t.Name, t.Snap)
		}
	}
	for _, l := range []struct {
		what  string
		names []string
	}{{"added", p.Added}, {"removed", p.Removed}, {"changed", p.Changed}} {
		if len(l.names) > 0 {
			fmt.Fprintf(w, "objects %s: %s\n", l.what, strings.Join(l.names, ", "))
		}
	}
	var server []string
	for _, t := range p.Server {
		if t.InNow {
			server = append(server, fmt.Sprintf("%s %s", t.Name, rowsWord(t.Now)))
		}
	}
	if !p.Everything {
		fmt.Fprintf(w, "kept as they are (the server's): %s\n", strings.Join(server, ", "))
		return
	}
	if len(p.Discards) == 0 {
		fmt.Fprintln(w, "memory rows discarded: none (nothing is newer than the snapshot)")
		return
	}
	fmt.Fprintf(w, "memory rows discarded (newer than the snapshot): %s\n", p.discardText())
}

// discardText is "memory_events 13-20 (8 rows), ...".
func (p *Plan) discardText() string {
	var parts []string
	for _, d := range p.Discards {
		parts = append(parts, fmt.Sprintf("%s ids %d-%d (%s)", d.Table, d.First, d.Last, rowsWord(d.N)))
	}
	return strings.Join(parts, ", ")
}

// summary is the plan in one line, for the restore event.
func (p *Plan) summary() string {
	var parts []string
	var replaced, added, removed []string
	for _, t := range p.Tables {
		switch {
		case t.InNow && t.InSnap:
			replaced = append(replaced, fmt.Sprintf("%s (%d -> %d rows)", t.Name, t.Now, t.Snap))
		case t.InNow:
			removed = append(removed, "table "+t.Name)
		default:
			added = append(added, fmt.Sprintf("table %s (%s)", t.Name, rowsWord(t.Snap)))
		}
	}
	added = append(added, p.Added...)
	removed = append(removed, p.Removed...)
	for _, l := range []struct {
		what  string
		names []string
	}{{"tables replaced", replaced}, {"added", added}, {"removed", removed}, {"changed", p.Changed}} {
		if len(l.names) > 0 {
			parts = append(parts, l.what+": "+strings.Join(l.names, ", "))
		}
	}
	if p.Everything {
		if len(p.Discards) > 0 {
			parts = append(parts, "memory rows discarded: "+p.discardText())
		} else {
			parts = append(parts, "no memory rows discarded")
		}
	}
	if len(parts) == 0 {
		return "no agent objects now or in the snapshot"
	}
	return strings.Join(parts, "; ")
}
