//go:build sandboxprobe

package worker

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// This file exists only in test binaries (go build -tags sandboxprobe): the
// worker, once confined exactly as in production, runs the attempts read
// from stdin instead of a request, and reports each outcome.

// probeAttempt is one thing the probe tries: read, write (an existing
// file), create, exec, or connect (host:port over TCP).
type probeAttempt struct {
	Op     string `json:"op"`
	Target string `json:"target"`
}

// probeOutcome is "ok" or the error text.
type probeOutcome struct {
	probeAttempt
	Result string `json:"result"`
}

func init() {
	probeHook = func(st *sandbox.State) int {
		var attempts []probeAttempt
		if err := json.NewDecoder(os.Stdin).Decode(&attempts); err != nil {
			os.Stderr.WriteString("probe: " + err.Error() + "\n")
			return 2
		}
		out := struct {
			Confined bool           `json:"confined"`
			Report   sandbox.Report `json:"report"`
			Outcomes []probeOutcome `json:"outcomes"`
		}{Confined: st.Allowance != nil, Report: st.Report}
		for _, a := range attempts {
			out.Outcomes = append(out.Outcomes, probeOutcome{a, probeTry(a)})
		}
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			return 2
		}
		return 0
	}
}

func probeTry(a probeAttempt) string {
	var err error
	switch a.Op {
	case "read":
		_, err = os.ReadFile(a.Target)
	case "write":
		var f *os.File
		if f, err = os.OpenFile(a.Target, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			_, err = f.WriteString("")
			f.Close()
		}
	case "create":
		var f *os.File
		if f, err = os.OpenFile(a.Target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.Close()
			os.Remove(a.Target)
		}
	case "exec":
		err = exec.Command(a.Target).Run()
	case "connect":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", a.Target, 2*time.Second); err == nil {
			c.Close()
		}
	default:
		return "unknown op"
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}
