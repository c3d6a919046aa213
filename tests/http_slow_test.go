package tests

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// trickler is a slow client: it connects, sends head, then one byte of
// more a second; when the server closes it, it connects again after a
// pause, until stop.
func trickler(addr, head, more string, pause time.Duration, dials *atomic.Int64, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			dials.Add(1)
			_, err = c.Write([]byte(head))
			for i := 0; err == nil; i++ {
				select {
				case <-stop:
					c.Close()
					return
				case <-time.After(time.Second):
				}
				_, err = c.Write([]byte{more[i%len(more)]})
			}
			c.Close()
		}
		select {
		case <-stop:
			return
		case <-time.After(pause):
		}
	}
}

// slowPost sends the headers of a POST with a 100-byte body and one
// byte of it, with header hdr, and returns the answer's status and how
// long it took.
func slowPost(t *testing.T, addr, hdr string) (int, time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n%s\r\n{", addr, hdr)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body within 30 s: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// TestHTTPTricklersCannotHoldTheServer (SPEC 11.1): 30 outsiders that
// trickle a body and 30 clients that trickle their headers, each coming
// back when closed, take no connection alice needs: all her calls are
// served. An outsider's refusal comes on its headers, without waiting for
// its body; an agent's body that does not arrive within --body-timeout is
// refused with 408.
func TestHTTPTricklersCannotHoldTheServer(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "mallory"}, "--max-connections", "32", "--header-timeout", "60", "--body-timeout", "2")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var dials atomic.Int64
	body := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", h.addr)
	headers := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Slow: ", h.addr)
	for range 30 {
		wg.Add(2)
		go trickler(h.addr, body, `{"jsonrpc":"2.0"}`, 2*time.Second, &dials, stop, &wg)
		go trickler(h.addr, headers, "abcdefgh", 2*time.Second, &dials, stop, &wg)
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	if !waitFor(30*time.Second, func() bool { return dials.Load() >= 60 }) {
		t.Fatalf("the tricklers made %d connections", dials.Load())
	}
	time.Sleep(time.Second) // let them trickle a while

	if status, took := slowPost(t, h.addr, ""); status != 401 || took > 10*time.Second {
		t.Fatalf("an outsider's trickled body: %d after %s, want 401 at once", status, took)
	}
	if status, took := slowPost(t, h.addr, "Authorization: Bearer "+h.token["mallory"]+"\r\n"); status != 408 || took > 15*time.Second {
		t.Fatalf("an agent's trickled body: %d after %s, want 408 after --body-timeout 2", status, took)
	}
	// Both generations, in turn while the tricklers go on (not parallel
	// subtests, which would run after they stopped).
	for _, modern := range []bool{false, true} {
		s := h.connect(t, "alice", modern)
		for i := range 10 {
			if got := s.ok("read_query", q(fmt.Sprintf("SELECT %d AS n", i))); got != fmt.Sprintf("n\n%d\n# 1 rows", i) {
				t.Fatalf("modern %v, call %d: %q", modern, i, got)
			}
		}
	}
	if got := dials.Load(); got < 60 {
		t.Fatalf("the tricklers made only %d connections", got)
	}
}
