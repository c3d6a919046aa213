package memory

import "testing"

func TestAgentOf(t *testing.T) {
	for session, want := range map[string]string{
		"20261202T180000Z-ab12@alice":  "alice",
		"20261202T180000Z-ab12@ci.r-1": "ci.r-1",
		"20261202T180000Z-ab12":        "",
		"hook":                         "",
		"x@":                           "",
		"x@a b":                        "",
		"a@b@carol":                    "carol",
	} {
		if got := AgentOf(session); got != want {
			t.Errorf("AgentOf(%q) = %q, want %q", session, got, want)
		}
	}
}

func TestRenderEventsAgentColumn(t *testing.T) {
	stdio := []Event{{ID: 1, TS: "t", Session: "s-1", Kind: "note", Content: "a"}}
	if got, _ := renderEvents(stdio, 0, 0); got != "id,ts,kind,content\n1,t,note,a\n" {
		t.Fatalf("stdio events: %q", got)
	}
	mixed := append(stdio, Event{ID: 2, TS: "t", Session: "s-1@bob", Kind: "note", Content: "b"})
	if got, _ := renderEvents(mixed, 0, 0); got != "id,ts,kind,content,agent\n1,t,note,a,\"\"\n2,t,note,b,bob\n" {
		t.Fatalf("mixed events: %q", got)
	}
}
