package ipc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"github.com/hashicorp/go-hclog"
)

// maxLogLine bounds one stderr line; longer lines are cut, not buffered.
const maxLogLine = 64 << 10

// stderrRelay re-logs a worker's hclog JSON lines under the front's logger,
// and anything else (a Go runtime crash) as a warning. What a worker says
// there classifies nothing: an out-of-memory death is told by the
// worker's memory alert (PhaseMemoryHigh) on stdout.
type stderrRelay struct {
	log  hclog.Logger
	done chan struct{}
}

func newStderrRelay(r io.Reader, log hclog.Logger) *stderrRelay {
	rl := &stderrRelay{log: log, done: make(chan struct{})}
	go rl.loop(r)
	return rl
}

func (rl *stderrRelay) loop(r io.Reader) {
	defer close(rl.done)
	br := bufio.NewReaderSize(r, 4096)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			rl.handle(line)
		}
		if err != nil {
			return
		}
	}
}

// readLine returns one line without its end, cut at maxLogLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLogLine {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

func (rl *stderrRelay) handle(line []byte) {
	var entry map[string]any
	if line[0] == '{' && json.Unmarshal(line, &entry) == nil {
		msg, _ := entry["@message"].(string)
		level := hclog.LevelFromString(stringOf(entry["@level"]))
		if level == hclog.NoLevel {
			level = hclog.Info
		}
		args := make([]any, 0, 2*len(entry))
		for k, v := range entry {
			switch k {
			case "@message", "@level", "@timestamp", "@module", "@caller":
				continue
			}
			args = append(args, k, v)
		}
		rl.log.Log(level, msg, args...)
		return
	}
	rl.log.Warn("worker stderr", "line", string(line))
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}
