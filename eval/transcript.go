package eval

import "encoding/json"

// Transcript records what happened while solving one task.
type Transcript struct {
	Turns        int     `json:"turns"` // model requests
	InputTokens  int     `json:"input_tokens,omitempty"`
	OutputTokens int     `json:"output_tokens,omitempty"`
	Events       []Event `json:"events"`
}

// Event kinds.
const (
	EventText     = "text"      // model text
	EventToolCall = "tool_call" // a server tool call and its result
	EventSubmit   = "submit"    // a submit_answer call
	EventNudge    = "nudge"     // the loop asked the model to submit
)

// Event is one entry of a Transcript.
type Event struct {
	Turn    int             `json:"turn,omitempty"`
	Kind    string          `json:"kind"`
	Tool    string          `json:"tool,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
	Output  string          `json:"output,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
}

// ToolCalls counts the server tool calls in t.
func (t Transcript) ToolCalls() int {
	n := 0
	for _, e := range t.Events {
		if e.Kind == EventToolCall {
			n++
		}
	}
	return n
}
