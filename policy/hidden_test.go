package policy

import "testing"

func TestIsHidden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hidden bool
	}{
		{"memory_recall", true},
		{"memory_recall_data", true},
		{"MEMORY_EVENTS_FTS", true},
		{"memory_vectors", true},
		{"Memory_Vectors", true},
		{"memory_events", false},
		{"query_log", false},
		{"memory_vectors_x", false},
		{"notes", false},
	} {
		if got := IsHidden(tc.name); got != tc.hidden {
			t.Errorf("IsHidden(%q) = %v, want %v", tc.name, got, tc.hidden)
		}
	}
	if !IsProtected("memory_vectors") {
		t.Error("memory_vectors is not protected")
	}
}
