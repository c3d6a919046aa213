package osfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMkdirAll(t *testing.T) {
	for _, tt := range []struct {
		name    string
		prepare func(root string)
		dir     string
		wantErr bool
	}{
		{"new nested folders", func(string) {}, "a/b/c", false},
		{"an existing folder", func(root string) { _ = os.MkdirAll(filepath.Join(root, "a"), 0o700) }, "a", false},
		{"a file in the way", func(root string) { _ = os.WriteFile(filepath.Join(root, "f"), nil, 0o600) }, "f/b", true},
		{"a file at the path", func(root string) { _ = os.WriteFile(filepath.Join(root, "f"), nil, 0o600) }, "f", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.prepare(root)
			dir := filepath.Join(root, tt.dir)
			err := MkdirAll(dir, 0o700)
			if (err != nil) != tt.wantErr {
				t.Fatalf("MkdirAll(%s): %v, want error %v", tt.dir, err, tt.wantErr)
			}
			if err == nil {
				if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
					t.Fatalf("%s is not a folder afterwards: %v", tt.dir, err)
				}
			}
		})
	}
}
