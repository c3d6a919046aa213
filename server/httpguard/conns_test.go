package httpguard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// closedByServer tells whether the server closed c (a read ends with
// EOF or a reset, not a timeout).
func closedByServer(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

// The listener keeps half of its slots for trusted connections and
// closes the oldest pending one to make room; only when every slot is
// trusted is a new connection closed at once.
func TestListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(raw, 4)
	defer l.Close()
	grace := PendingGrace
	PendingGrace = 0 // the oldest pending connection makes room at once
	defer func() { PendingGrace = grace }()
	type pair struct {
		client, server net.Conn
		ctx            context.Context
	}
	connect := func() pair {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return pair{c, s, l.ConnContext(context.Background(), s)}
	}
	counts := func(open, pending int) {
		t.Helper()
		if o, p := l.Open(); o != open || p != pending {
			t.Fatalf("open %d, pending %d; want %d, %d", o, p, open, pending)
		}
	}
	a, b := connect(), connect()
	Trust(a.ctx)
	counts(2, 1)
	c := connect()
	counts(3, 2)
	d := connect() // pending full: b, the oldest pending, makes room
	counts(3, 2)
	if !closedByServer(t, b.client) {
		t.Fatal("the oldest pending connection was not closed")
	}
	Trust(c.ctx)
	Trust(d.ctx)
	counts(3, 0)
	e := connect()
	f := connect() // all slots open: e, pending, makes room
	counts(4, 1)
	if !closedByServer(t, e.client) {
		t.Fatal("a pending connection kept its slot against a new one")
	}
	Trust(f.ctx)
	if !Untrust(f.ctx) {
		t.Fatal("Untrust of a trusted connection said it was not")
	}
	counts(4, 1) // f reads a body: pending again
	Trust(f.ctx)
	// Every slot trusted: the next connection is closed at accept.
	accepted := make(chan net.Conn, 1)
	go func() {
		s, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- s
	}()
	g, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !closedByServer(t, g) {
		t.Fatal("a connection beyond the trusted slots was kept")
	}
	counts(4, 0)
	a.server.Close() // a slot is free again
	h, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if s := <-accepted; s == nil {
		t.Fatal("no connection accepted once a slot was free")
	}
	counts(4, 1)
}

// Within PendingGrace a pending connection keeps its slot: the next
// connection waits (in the kernel's queue) until a slot frees.
func TestListenerGrace(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(raw, 4)
	defer l.Close()
	grace := PendingGrace
	PendingGrace = time.Hour
	defer func() { PendingGrace = grace }()
	var clients []net.Conn
	var ctxs []context.Context
	for range 2 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		ctxs = append(ctxs, l.ConnContext(context.Background(), s))
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		s, _ := l.Accept()
		accepted <- s
	}()
	late, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	Trust(ctxs[0]) // a pending slot frees: the late connection gets it
	select {
	case s := <-accepted:
		if s == nil {
			t.Fatal("Accept failed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the late connection was not accepted when a pending slot freed")
	}
	for i, c := range clients {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Fatalf("connection %d, within its grace, was closed: %v", i, err)
		}
	}
	if o, p := l.Open(); o != 3 || p != 2 {
		t.Fatalf("open %d, pending %d", o, p)
	}
	// Close ends a waiting Accept.
	errc := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		errc <- err
	}()
	l.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Accept after Close returned a connection")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting Accept did not return on Close")
	}
}

// A refusal is answered on the headers, and the connection closed, while
// the body trickles: the body is never waited for.
func TestRefuseDoesNotWaitForTheBody(t *testing.T) {
	refuse := AuthenticatorFunc(func(*http.Request) (Identity, *Refusal) { return Identity{}, &Refusal{} })
	srv := httptest.NewServer(Chain(ok, Authenticate(refuse, "r", "no token")))
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nx")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer while the body trickles: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !resp.Close {
		t.Fatalf("%d, close %v", resp.StatusCode, resp.Close)
	}
	if !closedByServer(t, c) {
		t.Fatal("the connection stayed open after the refusal")
	}
}

// A body that does not arrive within its time is refused with 408 and
// the connection closed.
func TestBodyTimeout(t *testing.T) {
	srv := httptest.NewServer(Chain(ok, Body(BodyLimits{Max: 1 << 10, Timeout: 200 * time.Millisecond, TooLarge: "large", TooSlow: "too slow"})))
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nx")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a body that stopped: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 408 || !strings.Contains(string(b), "too slow") {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	if !closedByServer(t, c) {
		t.Fatal("the connection stayed open after 408")
	}
}
