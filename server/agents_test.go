package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAgentLines: places in flight, the line, its bound, handing a place
// to the first in line, and leaving the line.
func TestAgentLines(t *testing.T) {
	var a agentLines
	type step struct {
		op     string // enter, release, leave
		agent  string
		wait   bool // enter: must wait
		full   bool // enter: refused
		waiter int  // leave: which waiter (index of the enters that waited)
		left   bool // leave: true when it was still waiting
	}
	var waiters []*turn
	for i, st := range []step{
		{op: "enter", agent: "bob"},
		{op: "enter", agent: "bob"},
		{op: "enter", agent: "bob", wait: true}, // waiter 0
		{op: "enter", agent: "bob", wait: true}, // waiter 1
		{op: "enter", agent: "bob", full: true}, // the line holds 2
		{op: "enter", agent: "alice"},           // another agent's line is its own
		{op: "release", agent: "bob"},           // waiter 0 takes the place
		{op: "leave", agent: "bob", waiter: 0},  // granted: not left
		{op: "leave", agent: "bob", waiter: 1, left: true},
		{op: "enter", agent: "bob", wait: true}, // waiter 2
		{op: "release", agent: "bob"},           // waiter 2
		{op: "release", agent: "bob"},
		{op: "release", agent: "bob"},
		{op: "release", agent: "alice"},
	} {
		switch st.op {
		case "enter":
			w, full, _ := a.enter(st.agent, 2, 2)
			if full != st.full || (w != nil) != st.wait {
				t.Fatalf("step %d: enter(%s) = wait %v full %v, want wait %v full %v", i, st.agent, w != nil, full, st.wait, st.full)
			}
			if w != nil {
				waiters = append(waiters, w)
			}
		case "release":
			a.release(st.agent)
		case "leave":
			if left := a.leave(st.agent, waiters[st.waiter]); left != st.left {
				t.Fatalf("step %d: leave = %v, want %v", i, left, st.left)
			}
		}
	}
	for i, w := range waiters {
		select {
		case <-w.ready:
			if i == 1 {
				t.Fatal("the waiter that left was handed a place")
			}
		default:
			if i != 1 {
				t.Fatalf("waiter %d was never handed its place", i)
			}
		}
	}
	if len(a.lines) != 0 {
		t.Fatalf("lines left after every call ended: %v", a.lines)
	}
}

// TestWorkerTurnsFair: with every worker held by bob and many of his
// calls waiting, a freed worker goes to alice's call (she holds fewer),
// then back to bob's in order.
func TestWorkerTurnsFair(t *testing.T) {
	g := &workerTurns{max: 2}
	ctx := context.Background()
	var releases []func()
	for range 2 {
		r, err := g.take(ctx, "bob", func() { t.Fatal("waited with a free worker") })
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	type granted struct {
		name    string
		release func()
	}
	got := make(chan granted, 16)
	start := func(agent, name string) {
		waiting := make(chan struct{})
		go func() {
			r, err := g.take(ctx, agent, func() { close(waiting) })
			if err != nil {
				got <- granted{name: "error"}
				return
			}
			got <- granted{name, r}
		}()
		<-waiting
	}
	next := func() granted {
		t.Helper()
		select {
		case gr := <-got:
			return gr
		case <-time.After(10 * time.Second):
			t.Fatal("no turn handed on")
			return granted{}
		}
	}
	// Bob's calls wait first, alice's last: she still comes first.
	for _, n := range []string{"bob1", "bob2", "bob3"} {
		start("bob", n)
	}
	start("alice", "alice")
	releases[0]()
	first := next()
	if first.name != "alice" {
		t.Fatalf("the freed worker went to %s, want alice", first.name)
	}
	// Then bob's, in the order they came, one per freed turn.
	last := first.release
	for _, want := range []string{"bob1", "bob2", "bob3"} {
		last()
		gr := next()
		if gr.name != want {
			t.Fatalf("turn went to %s, want %s (bob's in order)", gr.name, want)
		}
		last = gr.release
	}
	last()
	releases[1]()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.total != 0 || len(g.held) != 0 || len(g.waiting) != 0 {
		t.Fatalf("turns left: total %d held %v waiting %v", g.total, g.held, g.waiting)
	}
}

// A call cancelled while it waits leaves the line and holds no turn.
func TestWorkerTurnsCancelled(t *testing.T) {
	g := &workerTurns{max: 1}
	r, _ := g.take(context.Background(), "bob", func() {})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	waiting := make(chan struct{})
	go func() {
		_, err := g.take(ctx, "alice", func() { close(waiting) })
		errc <- err
	}()
	<-waiting
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled take: %v", err)
	}
	r()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.total != 0 || len(g.waiting) != 0 {
		t.Fatalf("after the cancel: total %d waiting %v", g.total, g.waiting)
	}
}
