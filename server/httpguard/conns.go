package httpguard

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// Listener bounds the open connections of a net.Listener and keeps part
// of them for authenticated clients. A connection is pending from its
// accept until a request on it is authenticated (Trust), and again while
// a request body is read (Untrust, then Trust): pending connections may
// hold at most half of the slots. When there is no room for the next
// connection, the oldest pending connection is closed to make it, once it
// has had PendingGrace to authenticate; until then the next connection
// waits in the kernel's queue (so a burst of new connections cannot close
// one that has just arrived, and connections are admitted in the order
// they came). Only when every slot is trusted is a new connection closed
// at once. So clients that connect and never authenticate, or trickle
// their headers or bodies, cannot keep an agent out.
//
// Use Listener.ConnContext as the http.Server's ConnContext, so that the
// checks find the connection of a request.
type Listener struct {
	net.Listener
	max, maxPending int

	mu      sync.Mutex
	open    int
	pending []*conn       // oldest first
	freed   chan struct{} // a slot was freed or a connection trusted
	closed  chan struct{}
	once    sync.Once
}

// PendingGrace is how long a pending connection keeps its slot against
// newer ones.
var PendingGrace = time.Second

// NewListener bounds l to max connections (at least 2).
func NewListener(l net.Listener, max int) *Listener {
	if max < 2 {
		max = 2
	}
	return &Listener{Listener: l, max: max, maxPending: max / 2, freed: make(chan struct{}, 1), closed: make(chan struct{})}
}

// Close closes the listener; a waiting Accept returns.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Accept returns the next connection, having made room for it.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		// Wait for room before accepting, so that waiting connections
		// stay in the kernel's queue, in the order they came.
		if _, err := l.makeRoom(); err != nil {
			return nil, err
		}
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := &conn{Conn: c, l: l}
		for !l.admit(tc) {
			full, err := l.makeRoom()
			if err != nil {
				_ = c.Close()
				return nil, err
			}
			if full {
				_ = c.Close()
				tc = nil
				break
			}
		}
		if tc != nil {
			return tc, nil
		}
	}
}

// makeRoom waits until a new connection fits, closing the oldest pending
// connection once its grace has passed; full says every slot is trusted
// (the next connection is then closed at once).
func (l *Listener) makeRoom() (full bool, err error) {
	for {
		l.mu.Lock()
		if l.open < l.max && len(l.pending) < l.maxPending {
			l.mu.Unlock()
			return false, nil
		}
		if len(l.pending) == 0 {
			l.mu.Unlock()
			return true, nil
		}
		oldest := l.pending[0]
		wait := PendingGrace - time.Since(oldest.since)
		if wait <= 0 {
			l.removeLocked(oldest)
			l.mu.Unlock()
			_ = oldest.Conn.Close()
			continue
		}
		l.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-l.freed:
		case <-t.C:
		case <-l.closed:
			t.Stop()
			return false, net.ErrClosed
		}
		t.Stop()
	}
}

// admit counts c in, as pending, if there is room.
func (l *Listener) admit(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max || len(l.pending) >= l.maxPending {
		return false
	}
	l.open++
	c.counted, c.isPending, c.since = true, true, time.Now()
	l.pending = append(l.pending, c)
	return true
}

// signal wakes a waiting Accept.
func (l *Listener) signal() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// removeLocked stops counting c.
func (l *Listener) removeLocked(c *conn) {
	if !c.counted {
		return
	}
	c.counted = false
	l.open--
	if c.isPending {
		l.dropPendingLocked(c)
	}
	l.signal()
}

func (l *Listener) dropPendingLocked(c *conn) {
	c.isPending = false
	for i, p := range l.pending {
		if p == c {
			l.pending = append(l.pending[:i], l.pending[i+1:]...)
			return
		}
	}
}

// Open and Pending are the counts of open and pending connections.
func (l *Listener) Open() (open, pending int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, len(l.pending)
}

type connKey struct{}

// ConnContext puts the connection in the context of its requests (the
// http.Server's ConnContext hook).
func (l *Listener) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if cc, ok := c.(*conn); ok && cc.l == l {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// Trust makes the connection of a request's context keep its slot: it is
// no longer closed to make room. Without a Listener it does nothing.
func Trust(ctx context.Context) {
	c, _ := ctx.Value(connKey{}).(*conn)
	if c == nil {
		return
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.counted && c.isPending {
		c.l.dropPendingLocked(c)
		c.l.signal()
	}
}

// Untrust makes the connection pending again, the newest one (a request
// body is being read), and says whether it was trusted.
func Untrust(ctx context.Context) bool {
	c, _ := ctx.Value(connKey{}).(*conn)
	if c == nil {
		return true
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if !c.counted || c.isPending {
		return false
	}
	c.isPending, c.since = true, time.Now()
	c.l.pending = append(c.l.pending, c)
	return true
}

// conn is a counted connection.
type conn struct {
	net.Conn
	l         *Listener
	since     time.Time // pending since; under l.mu
	counted   bool      // under l.mu
	isPending bool      // under l.mu
	once      sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.removeLocked(c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
