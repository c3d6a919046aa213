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
		{"memory_cluster_guard", true},
		{"MEMORY_CLUSTER_GUARD", true},
		{"memory_cluster_guard_x", false},
	} {
		if got := IsHidden(tc.name); got != tc.hidden {
			t.Errorf("IsHidden(%q) = %v, want %v", tc.name, got, tc.hidden)
		}
	}
	for _, name := range []string{"memory_vectors", "memory_cluster_guard", "memory_events_prev_hash"} {
		if !IsProtected(name) {
			t.Errorf("%s is not protected", name)
		}
	}
}
