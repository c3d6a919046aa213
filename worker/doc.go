// Package worker executes one request in its own short-lived process: it
// limits itself, opens the database, installs the authorizer policy,
// compiles and checks the agent's single statement, runs it and renders the
// result. Whatever the statement does, only this process suffers.
package worker
