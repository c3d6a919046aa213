package server

import "os"

// workerEnv is the environment every worker starts with. The sandbox
// settings travel here, so that a standby worker can confine itself before
// its request arrives.
func (s *Server) workerEnv() []string {
	env := os.Environ()
	if s.cfg.Verbose {
		env = append(env, "MCP_SQLITE_WORKER_LOG_LEVEL=debug")
	}
	return env
}
