package sampledb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
)

// shared is a database written once for the tests that only read it.
var shared string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sampledb-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = filepath.Join(dir, "sub", "dir", "shop.db") // also creates the parent directories
	if err := Write(context.Background(), shared); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func writeDB(t *testing.T, path string) {
	t.Helper()
	if err := Write(context.Background(), path); err != nil {
		t.Fatalf("Write(%s): %v", path, err)
	}
}

func openRO(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", fileURI(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// contentHash hashes every row of every table in primary-key order, with the
// SQLite storage class of each value, so it sees logical differences only.
func contentHash(t *testing.T, db *sql.DB) string {
	t.Helper()
	h := sha256.New()
	for _, table := range Tables() {
		rows, err := sqlitetest.Rows(db, "SELECT * FROM "+table+" ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		for _, vals := range rows {
			for _, v := range vals {
				fmt.Fprintf(h, "%T:%v|", v, v)
			}
			h.Write([]byte{'\n'})
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestWriteDeterministic(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), shared
	writeDB(t, a)

	if ha, hb := contentHash(t, openRO(t, a)), contentHash(t, openRO(t, b)); ha != hb {
		t.Errorf("logical content differs: %s vs %s", ha, hb)
	}
	ba, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ba, bb) {
		t.Errorf("files are not byte-identical (%d vs %d bytes)", len(ba), len(bb))
	}
	for _, p := range []string{a, b} { // no journal or WAL left beside either
		if _, err := os.Stat(p + "-journal"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s-journal left behind (err=%v)", p, err)
		}
		if _, err := os.Stat(p + "-wal"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s-wal left behind (err=%v)", p, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "a.db" {
			t.Errorf("unexpected file left in %s: %s", dir, e.Name())
		}
	}
}

// TestGoldenHash pins the generated rows: if it fails, the generator changed
// and every documented example and reference answer changes with it.
func TestGoldenHash(t *testing.T) {
	const want = "e4b24ad2eb04ef0a221c99bc4bd795643683e12c6db36c9c0ca81ac35ec0b8ef"
	if got := contentHash(t, openRO(t, shared)); got != want {
		t.Errorf("content hash = %s, want %s", got, want)
	}
}

func TestWriteRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		setup   func(path string) error
		wantErr error
		anyErr  bool
	}{
		{"empty file", func(p string) error { return os.WriteFile(p, nil, 0o644) }, nil, false},
		{"non-empty file", func(p string) error { return os.WriteFile(p, []byte("keep me"), 0o644) }, ErrExists, true},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".db")
			if err := tt.setup(path); err != nil {
				t.Fatal(err)
			}
			err := Write(context.Background(), path)
			if tt.anyErr != (err != nil) {
				t.Fatalf("Write error = %v, want error %v", err, tt.anyErr)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Write error = %v, want %v", err, tt.wantErr)
			}
			if tt.name == "non-empty file" {
				if b, _ := os.ReadFile(path); string(b) != "keep me" {
					t.Errorf("existing file was changed: %q", b)
				}
			}
		})
	}
	if err := Write(context.Background(), ""); err == nil {
		t.Error("Write with an empty path succeeded")
	}
}

func TestWriteCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Write(ctx, filepath.Join(dir, "x.db")); err == nil {
		t.Fatal("Write with a cancelled context succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

func TestContent(t *testing.T) {
	db := openRO(t, shared)

	scalar := func(t *testing.T, q string) any {
		t.Helper()
		var v any
		if err := db.QueryRow(q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v
	}

	t.Run("counts", func(t *testing.T) {
		for table, want := range Counts() {
			if got := scalar(t, "SELECT count(*) FROM "+table); got != int64(want) {
				t.Errorf("%s: %v rows, want %d", table, got, want)
			}
		}
	})
	t.Run("foreign keys", func(t *testing.T) {
		rows, err := db.Query("PRAGMA foreign_key_check")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		if rows.Next() {
			t.Error("PRAGMA foreign_key_check reports violations")
		}
	})
	t.Run("integrity", func(t *testing.T) {
		if got := scalar(t, "PRAGMA integrity_check"); got != "ok" {
			t.Errorf("integrity_check = %v", got)
		}
	})
	t.Run("journal mode", func(t *testing.T) {
		if got := scalar(t, "PRAGMA journal_mode"); got != "delete" {
			t.Errorf("journal_mode = %v", got)
		}
	})

	// Each query counts rows that break a rule, so the answer must be 0.
	checks := []struct{ name, sql string }{
		{"order dates in range", fmt.Sprintf(
			"SELECT count(*) FROM orders WHERE order_date NOT BETWEEN '%s' AND '%s' OR date(order_date) IS NOT order_date",
			FirstOrderDate, LastOrderDate)},
		{"signup dates in range", fmt.Sprintf(
			"SELECT count(*) FROM customers WHERE signup_date NOT BETWEEN '%s' AND '%s' OR date(signup_date) IS NOT signup_date",
			FirstSignupDate, LastSignupDate)},
		{"orders after signup", "SELECT count(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.order_date < c.signup_date"},
		{"prices in cents", "SELECT count(*) FROM products WHERE typeof(price) != 'real' OR round(price, 2) != price"},
		{"unit prices in cents", "SELECT count(*) FROM order_items WHERE typeof(unit_price) != 'real' OR round(unit_price, 2) != unit_price OR unit_price > (SELECT price FROM products p WHERE p.id = product_id)"},
		{"every order has items", "SELECT count(*) FROM orders WHERE id NOT IN (SELECT order_id FROM order_items)"},
		{"distinct products per order", "SELECT count(*) FROM (SELECT order_id, product_id FROM order_items GROUP BY 1, 2 HAVING count(*) > 1)"},
		{"ids without gaps", "SELECT (SELECT max(id) FROM customers) - 200 + (SELECT max(id) FROM products) - 60 + (SELECT max(id) FROM orders) - 3000 + (SELECT max(id) FROM order_items) - 8000"},
		{"order ids follow dates", "SELECT count(*) FROM orders a JOIN orders b ON b.id = a.id + 1 WHERE b.order_date < a.order_date"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if got := scalar(t, c.sql); got != int64(0) {
				t.Errorf("%v violations", got)
			}
		})
	}

	// Variety the evaluation questions rely on.
	at := []struct {
		name string
		sql  string
		min  int64
	}{
		{"categories", "SELECT count(DISTINCT category) FROM products", 8},
		{"statuses", "SELECT count(DISTINCT status) FROM orders", int64(len(Statuses))},
		{"countries", "SELECT count(DISTINCT country) FROM customers", 10},
		{"customers without orders", "SELECT count(*) FROM customers WHERE id NOT IN (SELECT customer_id FROM orders)", 1},
		{"orders in 2025", "SELECT count(*) FROM orders WHERE order_date >= '2025-01-01'", 1000},
		{"customers in Germany", "SELECT count(*) FROM customers WHERE country = 'Germany'", 5},
	}
	for _, c := range at {
		t.Run(c.name, func(t *testing.T) {
			got, ok := scalar(t, c.sql).(int64)
			if !ok || got < c.min {
				t.Errorf("got %v, want at least %d", got, c.min)
			}
		})
	}
}

func TestRNGBounds(t *testing.T) {
	r := rng{rand.NewPCG(1, 2)}
	for _, n := range []int{1, 2, 3, 7, 1000, 1 << 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for range 1000 {
				if v := r.intn(n); v < 0 || v >= n {
					t.Fatalf("intn(%d) = %d", n, v)
				}
			}
		})
	}
}
