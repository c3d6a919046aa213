package osfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// MkdirAll is os.MkdirAll that also syncs the parent of every folder it
// creates, so that a file written and synced into dir later is not lost
// with a folder whose own name never reached the disk. A folder that
// exists is left alone (and costs no sync).
func MkdirAll(dir string, perm fs.FileMode) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: errors.New("not a directory")}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // made meanwhile by another process
		}
		return err
	}
	SyncDir(parent)
	return nil
}
