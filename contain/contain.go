package contain

import "errors"

// ErrNoBreakaway is Children's answer on Windows when this process is in
// a Job Object that lets no child break away: the server then stays out of
// a job of its own, or the Litestream guard could not outlive it.
var ErrNoBreakaway = errors.New("the server runs in a Job Object that lets no child break away")
