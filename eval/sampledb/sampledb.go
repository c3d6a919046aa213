package sampledb

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Schema is the DDL of the sample database, executed as written.
const Schema = `CREATE TABLE customers (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL,
  email       TEXT NOT NULL UNIQUE,
  city        TEXT NOT NULL,
  country     TEXT NOT NULL,
  signup_date TEXT NOT NULL
);
CREATE TABLE products (
  id       INTEGER PRIMARY KEY,
  name     TEXT NOT NULL UNIQUE,
  category TEXT NOT NULL,
  price    REAL NOT NULL CHECK (price > 0)
);
CREATE TABLE orders (
  id          INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(id),
  order_date  TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'shipped', 'delivered', 'cancelled'))
);
CREATE TABLE order_items (
  id         INTEGER PRIMARY KEY,
  order_id   INTEGER NOT NULL REFERENCES orders(id),
  product_id INTEGER NOT NULL REFERENCES products(id),
  quantity   INTEGER NOT NULL CHECK (quantity > 0),
  unit_price REAL NOT NULL CHECK (unit_price >= 0)
);
CREATE INDEX orders_customer_id ON orders(customer_id);
CREATE INDEX orders_order_date ON orders(order_date);
CREATE INDEX order_items_order_id ON order_items(order_id);
CREATE INDEX order_items_product_id ON order_items(product_id);
`

// Row counts of the sample database; they are exact, not approximate.
const (
	Customers  = 200
	Products   = 60
	Orders     = 3000
	OrderItems = 8000
)

// Date ranges of the sample data, as stored ('YYYY-MM-DD').
const (
	FirstOrderDate  = "2024-01-01"
	LastOrderDate   = "2025-12-31"
	FirstSignupDate = "2022-01-01"
	LastSignupDate  = "2025-09-30"
)

// Statuses lists the order statuses the sample data uses.
var Statuses = []string{"pending", "paid", "shipped", "delivered", "cancelled"}

// Counts returns the row count of every table, keyed by table name.
func Counts() map[string]int {
	return map[string]int{
		"customers":   Customers,
		"products":    Products,
		"orders":      Orders,
		"order_items": OrderItems,
	}
}

// Tables returns the table names in creation order.
func Tables() []string {
	return []string{"customers", "products", "orders", "order_items"}
}

// ErrExists is returned by Write when the target file exists and is not empty.
var ErrExists = errors.New("file exists and is not empty")

// Fixed seeds: changing them changes every row and every reference answer.
const (
	seedHi = 0x6d63702d73716c69 // "mcp-sqli"
	seedLo = 0x74652d73686f7021 // "te-shop!"
)

const maxItemsPerOrder = 8

// Write writes the sample database to path, creating parent directories. It
// refuses (ErrExists) to overwrite a file that exists and is not empty. The
// database is built in a temporary file next to path and renamed into place,
// so a failed or cancelled write leaves nothing behind.
func Write(ctx context.Context, path string) (err error) {
	if path == "" {
		return errors.New("sampledb: empty path")
	}
	if err := checkTarget(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sampledb: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("sampledb: %w", err)
	}
	tmpName := tmp.Name()
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("sampledb: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmpName)
			_ = os.Remove(tmpName + "-journal")
		}
	}()
	// CreateTemp makes the file 0600; a sample database is not secret.
	if err := os.Chmod(tmpName, 0o644); err != nil {
		return fmt.Errorf("sampledb: %w", err)
	}
	if err := build(ctx, tmpName, generate()); err != nil {
		return fmt.Errorf("sampledb: write %s: %w", path, err)
	}
	// Check again: another process may have written path in the meantime.
	if err := checkTarget(path); err != nil {
		return err
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("sampledb: %w", err)
	}
	return nil
}

func checkTarget(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("sampledb: %w", err)
	case fi.IsDir():
		return fmt.Errorf("sampledb: %s is a directory", path)
	case fi.Size() > 0:
		return fmt.Errorf("sampledb: %s: %w", path, ErrExists)
	}
	return nil
}

// fileURI makes a SQLite URI for path, escaping the characters that would
// otherwise end the path ('?', '#') or start an escape ('%').
func fileURI(path string, params string) string {
	p := filepath.ToSlash(path)
	p = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
	if params != "" {
		return "file:" + p + "?" + params
	}
	return "file:" + p
}

func build(ctx context.Context, path string, d *data) error {
	db, err := sql.Open("sqlite", fileURI(path, ""))
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()

	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = ON"); err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if _, err := tx.ExecContext(ctx, Schema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if err := insertAll(ctx, tx, d); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	// DELETE (not WAL) so the result is one self-contained file.
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode = DELETE").Scan(&mode); err != nil {
		return err
	}
	if mode != "delete" {
		return fmt.Errorf("journal_mode is %q, want delete", mode)
	}
	if err := conn.Close(); err != nil {
		return err
	}
	return db.Close()
}

func insertAll(ctx context.Context, tx *sql.Tx, d *data) error {
	type batch struct {
		sql  string
		n    int
		args func(i int) []any
	}
	batches := []batch{
		{"INSERT INTO customers (id, name, email, city, country, signup_date) VALUES (?, ?, ?, ?, ?, ?)",
			len(d.customers), func(i int) []any {
				c := d.customers[i]
				return []any{c.id, c.name, c.email, c.city, c.country, c.signup}
			}},
		{"INSERT INTO products (id, name, category, price) VALUES (?, ?, ?, ?)",
			len(d.products), func(i int) []any {
				p := d.products[i]
				return []any{p.id, p.name, p.category, cents(p.priceCents)}
			}},
		{"INSERT INTO orders (id, customer_id, order_date, status) VALUES (?, ?, ?, ?)",
			len(d.orders), func(i int) []any {
				o := d.orders[i]
				return []any{o.id, o.customerID, o.date, o.status}
			}},
		{"INSERT INTO order_items (id, order_id, product_id, quantity, unit_price) VALUES (?, ?, ?, ?, ?)",
			len(d.items), func(i int) []any {
				it := d.items[i]
				return []any{it.id, it.orderID, it.productID, it.quantity, cents(it.unitCents)}
			}},
	}
	for _, b := range batches {
		stmt, err := tx.PrepareContext(ctx, b.sql)
		if err != nil {
			return err
		}
		for i := range b.n {
			if _, err := stmt.ExecContext(ctx, b.args(i)...); err != nil {
				stmt.Close()
				return err
			}
		}
		if err := stmt.Close(); err != nil {
			return err
		}
	}
	return nil
}

// cents converts an integer amount of cents to the REAL stored; the division
// is correctly rounded IEEE arithmetic, so the value is the same everywhere.
func cents(c int) float64 { return float64(c) / 100 }

type customer struct {
	id                                 int
	name, email, city, country, signup string
	signupDay                          int
}

type product struct {
	id             int
	name, category string
	priceCents     int
	weight         int
}

type order struct {
	id, customerID int
	day            int
	date, status   string
}

type item struct {
	id, orderID, productID, quantity, unitCents int
}

type data struct {
	customers []customer
	products  []product
	orders    []order
	items     []item
}

// rng derives bounded integers from PCG's raw output with Lemire's method,
// so the sequence depends only on the PCG algorithm, not on how a Go release
// implements rand.Rand's helpers.
type rng struct{ src *rand.PCG }

func (r rng) intn(n int) int {
	un := uint64(n)
	hi, lo := bits.Mul64(r.src.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(r.src.Uint64(), un)
		}
	}
	return int(hi)
}

// between returns an integer in [lo, hi].
func (r rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func dayOf(s string) int {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err) // only called on the constants above
	}
	return int(t.Sub(epoch).Hours() / 24)
}

func dateOf(day int) string { return epoch.AddDate(0, 0, day).Format(time.DateOnly) }

func generate() *data {
	r := rng{rand.NewPCG(seedHi, seedLo)}
	d := &data{}

	// Customers.
	signupLo, signupHi := dayOf(FirstSignupDate), dayOf(LastSignupDate)
	seenEmail := map[string]bool{}
	for i := range Customers {
		first := firstNames[r.intn(len(firstNames))]
		last := lastNames[r.intn(len(lastNames))]
		pl := places[r.intn(len(places))]
		domain := emailDomains[r.intn(len(emailDomains))]
		local := strings.ToLower(first + "." + last)
		email := local + "@" + domain
		for n := 2; seenEmail[email]; n++ {
			email = fmt.Sprintf("%s%d@%s", local, n, domain)
		}
		seenEmail[email] = true
		day := r.between(signupLo, signupHi)
		d.customers = append(d.customers, customer{
			id: i + 1, name: first + " " + last, email: email,
			city: pl.city, country: pl.country, signup: dateOf(day), signupDay: day,
		})
	}

	// Products: prices end in .99 like a real shop's.
	for _, c := range categories {
		for _, name := range c.productNames {
			p := r.between(c.minCents, c.maxCents)
			p = p/100*100 + 99
			d.products = append(d.products, product{
				id: len(d.products) + 1, name: name, category: c.name,
				priceCents: p, weight: 1 + r.intn(10),
			})
		}
	}
	if len(d.products) != Products {
		panic(fmt.Sprintf("sampledb: %d products in the lists, want %d", len(d.products), Products))
	}

	// Orders: customers buy at different rates, about one in sixteen never.
	weights := make([]int, Customers)
	total := 0
	for i := range weights {
		if r.intn(16) != 0 {
			weights[i] = 1 + r.intn(12)
		}
		total += weights[i]
	}
	orderLo, orderHi := dayOf(FirstOrderDate), dayOf(LastOrderDate)
	for range Orders {
		ci := pick(weights, r.intn(total))
		c := d.customers[ci]
		lo := max(orderLo, c.signupDay)
		day := r.between(lo, orderHi)
		d.orders = append(d.orders, order{customerID: c.id, day: day})
	}
	// Ids follow the order date, as in a real shop.
	slices.SortStableFunc(d.orders, func(a, b order) int { return cmp.Compare(a.day, b.day) })
	for i := range d.orders {
		o := &d.orders[i]
		o.id = i + 1
		o.date = dateOf(o.day)
		o.status = status(r, orderHi-o.day)
	}

	// Order items: one per order, the rest spread at random, distinct
	// products within an order, popular products drawn more often.
	perOrder := make([]int, Orders)
	for i := range perOrder {
		perOrder[i] = 1
	}
	for extra := OrderItems - Orders; extra > 0; {
		o := r.intn(Orders)
		if perOrder[o] < maxItemsPerOrder {
			perOrder[o]++
			extra--
		}
	}
	pweights := make([]int, Products)
	ptotal := 0
	for i, p := range d.products {
		pweights[i] = p.weight
		ptotal += p.weight
	}
	for oi, n := range perOrder {
		used := map[int]bool{}
		for range n {
			pi := pick(pweights, r.intn(ptotal))
			for used[pi] {
				pi = pick(pweights, r.intn(ptotal))
			}
			used[pi] = true
			p := d.products[pi]
			unit := p.priceCents
			if r.intn(100) < 15 { // a discount of 10 or 20 percent, rounded to the cent
				off := 10 * (1 + r.intn(2))
				unit = (unit*(100-off) + 50) / 100
			}
			d.items = append(d.items, item{
				id: len(d.items) + 1, orderID: d.orders[oi].id, productID: p.id,
				quantity: quantity(r), unitCents: unit,
			})
		}
	}
	return d
}

// pick returns the index whose cumulative weight range holds x.
func pick(weights []int, x int) int {
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	panic("sampledb: pick out of range")
}

func quantity(r rng) int {
	switch x := r.intn(100); {
	case x < 60:
		return 1
	case x < 85:
		return 2
	case x < 95:
		return 3
	default:
		return 4 + r.intn(2)
	}
}

// status follows the order's age (days before the last order date): recent
// orders are still in progress, older ones delivered, some cancelled.
func status(r rng, age int) string {
	if r.intn(100) < 6 {
		return "cancelled"
	}
	x := r.intn(100)
	switch {
	case age < 5:
		if x < 50 {
			return "pending"
		}
		return "paid"
	case age < 14:
		if x < 30 {
			return "paid"
		}
		return "shipped"
	case age < 30:
		if x < 40 {
			return "shipped"
		}
		return "delivered"
	default:
		return "delivered"
	}
}
