package cli

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestSplitRestoreFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    restoreFlags
		rest    []string
		wantErr string
	}{
		{name: "none", args: []string{"--db", "m.db", "snap.db"}, rest: []string{"--db", "m.db", "snap.db"}},
		{name: "reason before", args: []string{"--reason", "undo it", "--db", "m.db", "snap.db"}, want: restoreFlags{reason: "undo it"}, rest: []string{"--db", "m.db", "snap.db"}},
		{name: "reason= after the snapshot", args: []string{"--db", "m.db", "snap.db", "--reason=undo it"}, want: restoreFlags{reason: "undo it"}, rest: []string{"--db", "m.db", "snap.db"}},
		{name: "single dash", args: []string{"-everything", "-dry-run", "snap.db"}, want: restoreFlags{everything: true, dryRun: true}, rest: []string{"snap.db"}},
		{name: "bool values", args: []string{"--everything=false", "--dry-run=true", "snap.db"}, want: restoreFlags{dryRun: true}, rest: []string{"snap.db"}},
		{name: "after --", args: []string{"--db", "m.db", "--", "--everything"}, rest: []string{"--db", "m.db", "--", "--everything"}},
		{name: "reason without text", args: []string{"snap.db", "--reason"}, wantErr: "--reason needs a text"},
		{name: "cluster", args: []string{"--rqlite", "h1:4001,h2:4001", "--rqlite-data=/d/n1", "--max-request-mb", "8", "snap.db"}, want: restoreFlags{rqlite: "h1:4001,h2:4001", rqliteData: "/d/n1", maxRequestMB: 8}, rest: []string{"snap.db"}},
		{name: "rqlite without nodes", args: []string{"snap.db", "--rqlite"}, wantErr: "--rqlite needs a value"},
		{name: "bad request bound", args: []string{"--max-request-mb=0", "snap.db"}, wantErr: `invalid value "0" for --max-request-mb`},
		{name: "bad bool", args: []string{"--everything=maybe"}, wantErr: `invalid value "maybe" for --everything`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest, err := splitRestoreFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || !slices.Equal(rest, tt.rest) {
				t.Fatalf("got %+v %q %v, want %+v %q", got, rest, err, tt.want, tt.rest)
			}
		})
	}
}

// TestRestoreClusterUsage: what restore --rqlite refuses before it
// talks to any node, with the line to type instead (exit 2).
func TestRestoreClusterUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"everything", []string{"restore", "--rqlite", "127.0.0.1:4001", "--everything", "s.db"}, "--everything is not for a cluster"},
		{"force", []string{"restore", "--rqlite", "127.0.0.1:4001", "--force", "s.db"}, "--force is for undo records"},
		{"db too", []string{"restore", "--rqlite", "127.0.0.1:4001", "--db", "m.db", "s.db"}, "--db and --rqlite both given"},
		{"data without nodes", []string{"restore", "--rqlite-data", dir, "s.db"}, "needs its nodes too"},
		{"bad node", []string{"restore", "--rqlite", "http://h:1/path", "s.db"}, "--rqlite: "},
		{"no snapshot", []string{"restore", "--rqlite", "127.0.0.1:4001", "--rqlite-data", dir}, "holds no snapshots"},
		{"two snapshots", []string{"restore", "--rqlite", "127.0.0.1:4001", "a.db", "b.db"}, "one snapshot file, got 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb strings.Builder
			code := Run(context.Background(), tt.args, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
			if code != 2 || !strings.Contains(errb.String(), tt.want) || !strings.Contains(errb.String(), "Try: ") {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errb.String(), tt.want)
			}
		})
	}
}
