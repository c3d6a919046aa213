package memory

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// OpenReadOnly verifies (and exports: portable's TestExportReadOnly), refuses to write, and leaves the
// file's bytes as they were.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"one", "two", "three"} {
		if _, err := s.Append(ctx, "20260101T000000Z-beef", "note", c); err != nil {
			t.Fatal(err)
		}
	}
	want, err := s.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, err := os.ReadFile(path) // no connection is open here
	if err != nil {
		t.Fatal(err)
	}

	r, err := OpenReadOnly(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Verify(ctx)
	if err != nil || !v.OK || v.Events != 3 || v != want {
		t.Fatalf("verify: %+v %v, want %+v", v, err, want)
	}
	if _, err := r.Append(ctx, "20260101T000000Z-beef", "note", "four"); err == nil {
		t.Fatal("an append through a read-only store succeeded")
	}
	if _, err := r.Checkpoint(ctx, "20260101T000000Z-beef", "sum"); err == nil {
		t.Fatal("a checkpoint through a read-only store succeeded")
	}
	r.Close()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the read-only store changed the file")
	}

	dir := t.TempDir()
	text := filepath.Join(dir, "t.db")
	if err := os.WriteFile(text, bytes.Repeat([]byte("not sqlite "), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(ctx, text, nil); !errors.Is(err, ErrNotDatabase) {
		t.Errorf("text file: %v", err)
	}
	if _, err := OpenReadOnly(ctx, filepath.Join(dir, "none.db"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !os.IsNotExist(err) {
		t.Error("OpenReadOnly created a file")
	}
}
