package policy

import (
	"regexp"
	"testing"
)

func TestValidViewName(t *testing.T) {
	shape := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	for _, name := range []string{"", "v", "_", "V_1", "recent_events", "1v", "v-1", "v 1", "vé", "v.x", `"v"`, "Z9", "_9", "9", "v\n"} {
		t.Run(name, func(t *testing.T) {
			if got, want := ValidViewName(name), shape.MatchString(name); got != want {
				t.Fatalf("ValidViewName(%q) = %v, the regexp says %v", name, got, want)
			}
		})
	}
}
