// Package replicate runs Litestream beside the server (--replicate). Plan
// checks the setting before the server opens or creates any file; Start
// runs `litestream replicate` under a guard process (RunGuard: the server's
// binary re-run as GuardCommand), which stops Litestream with one signal
// and a final sync when the server stops or dies. The guard inherits the
// locks that keep `restore` away (the server's shared lock on the database,
// on Unix) and a second Litestream away (the replicator lock, one server at
// a time), so neither is released before Litestream has finished.
//
// Imports: osfile only. Never server (which calls it), memory or worker.
package replicate
