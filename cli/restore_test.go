package cli

import (
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
