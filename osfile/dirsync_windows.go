package osfile

// SyncDir does nothing on Windows: NTFS journals the rename itself, and a
// folder cannot be opened for FlushFileBuffers without extra privileges.
func SyncDir(string) {}
