package tokens

import "os"

// Windows has no mode bits for others (os.Chmod only toggles read-only):
// who may read the file is its ACL, which the folder's inheritance sets.
// The server logs PlatformNote once instead.
const chmodUnsupported = true

func modeProblem(string, os.FileMode) error { return nil }

// PlatformNote is what the server logs once about the file's protection.
const PlatformNote = "the token file's permissions are not checked on Windows: keep it in a folder only you and the service account can read"
