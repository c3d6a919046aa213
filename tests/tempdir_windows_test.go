package tests

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// errInvalidFunction is ERROR_INVALID_FUNCTION (1).
const errInvalidFunction = syscall.Errno(1)

// removeTree removes dir and what it holds. Go deletes with
// FILE_DISPOSITION_POSIX_SEMANTICS, and Wine 8 answers that with
// ERROR_INVALID_FUNCTION (Windows 10 and later support it, and older
// Windows get Go's own fallback); then each file and folder is deleted the
// classic way, deepest first.
func removeTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || !errors.Is(err, errInvalidFunction) {
		return err
	}
	var paths []string
	walkErr := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		return nil
	})
	if walkErr != nil {
		return walkErr
	}
	for i := len(paths) - 1; i >= 0; i-- {
		p, err := syscall.UTF16PtrFromString(paths[i])
		if err != nil {
			return err
		}
		remove := syscall.DeleteFile
		if fi, statErr := os.Lstat(paths[i]); statErr == nil && fi.IsDir() {
			remove = syscall.RemoveDirectory
		}
		if err := remove(p); err != nil && !errors.Is(err, syscall.ERROR_FILE_NOT_FOUND) {
			return err
		}
	}
	return nil
}
