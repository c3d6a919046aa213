package mcpstdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// session is the one client of a stdio connection, as mcp-go's MCPServer
// sees it: it is initialized by initialize, keeps the client's info,
// capabilities, protocol version and log level, queues mcp-go's
// notifications, and sends the server's requests to the client.
type session struct {
	out           *writer
	notifications chan mcp.JSONRPCNotification

	initialized  atomic.Bool
	logLevel     atomic.Value // mcp.LoggingLevel
	clientInfo   atomic.Value // mcp.Implementation
	capabilities atomic.Value // mcp.ClientCapabilities
	version      atomic.Value // string

	lastID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan clientResponse // the server's requests awaiting their response
}

// clientResponse is the client's answer to one of the session's requests.
type clientResponse struct {
	result json.RawMessage
	err    *mcp.JSONRPCErrorDetails
}

var (
	_ mcpserver.ClientSession              = (*session)(nil)
	_ mcpserver.SessionWithLogging         = (*session)(nil)
	_ mcpserver.SessionWithClientInfo      = (*session)(nil)
	_ mcpserver.SessionWithProtocolVersion = (*session)(nil)
	_ mcpserver.SessionWithElicitation     = (*session)(nil)
	_ mcpserver.SessionWithSampling        = (*session)(nil)
	_ mcpserver.SessionWithRoots           = (*session)(nil)
)

func newSession(out *writer) *session {
	return &session{
		out:           out,
		notifications: make(chan mcp.JSONRPCNotification, 100), // as mcp-go's stdio session
		pending:       map[int64]chan clientResponse{},
	}
}

func (s *session) SessionID() string { return "stdio" }

func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notifications }

func (s *session) Initialize() {
	s.logLevel.Store(mcp.LoggingLevelError)
	s.initialized.Store(true)
}

func (s *session) Initialized() bool { return s.initialized.Load() }

func (s *session) SetLogLevel(level mcp.LoggingLevel) { s.logLevel.Store(level) }

func (s *session) GetLogLevel() mcp.LoggingLevel {
	if l, ok := s.logLevel.Load().(mcp.LoggingLevel); ok {
		return l
	}
	return mcp.LoggingLevelError
}

func (s *session) GetClientInfo() mcp.Implementation {
	i, _ := s.clientInfo.Load().(mcp.Implementation)
	return i
}

func (s *session) SetClientInfo(i mcp.Implementation) { s.clientInfo.Store(i) }

func (s *session) GetClientCapabilities() mcp.ClientCapabilities {
	c, _ := s.capabilities.Load().(mcp.ClientCapabilities)
	return c
}

func (s *session) SetClientCapabilities(c mcp.ClientCapabilities) { s.capabilities.Store(c) }

func (s *session) ProtocolVersion() string {
	v, _ := s.version.Load().(string)
	return v
}

func (s *session) SetProtocolVersion(v string) { s.version.Store(v) }

// forwardNotifications writes mcp-go's notifications (logging, list
// changes) until ctx ends.
func (s *session) forwardNotifications(ctx context.Context) {
	for {
		select {
		case n := <-s.notifications:
			_ = s.out.write(nil, n)
		case <-ctx.Done():
			return
		}
	}
}

// RequestElicitation asks the client for input (elicitation/create) and
// waits for its answer or for ctx to end.
func (s *session) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var res mcp.ElicitationResult
	if err := s.request(ctx, mcp.MethodElicitationCreate, req.Params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// RequestSampling asks the client for an LLM completion
// (sampling/createMessage).
func (s *session) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var res mcp.CreateMessageResult
	if err := s.request(ctx, mcp.MethodSamplingCreateMessage, req.CreateMessageParams, &res); err != nil {
		return nil, err
	}
	content, err := mcp.ParseSamplingContent(res.Content)
	if err != nil {
		return nil, fmt.Errorf("%s: parse the content of the response: %w", mcp.MethodSamplingCreateMessage, err)
	}
	res.Content = content
	return &res, nil
}

// ListRoots asks the client for its roots (roots/list).
func (s *session) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var res mcp.ListRootsResult
	if err := s.request(ctx, mcp.MethodListRoots, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// request sends one request to the client and decodes its result into
// res. Its ids count from 1, as mcp-go's stdio session's do.
func (s *session) request(ctx context.Context, method mcp.MCPMethod, params any, res any) error {
	id := s.lastID.Add(1)
	answer := make(chan clientResponse, 1)
	s.mu.Lock()
	s.pending[id] = answer
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	msg := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{mcp.JSONRPC_VERSION, id, string(method), params}
	if err := s.out.write(nil, msg); err != nil {
		return fmt.Errorf("%s: write the request: %w", method, err)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case a := <-answer:
		if a.err != nil {
			return fmt.Errorf("%s request failed: %w", method, errors.New(a.err.Message))
		}
		if err := json.Unmarshal(a.result, res); err != nil {
			return fmt.Errorf("%s: decode the response: %w", method, err)
		}
		return nil
	}
}

// message is what the read loop needs of a line, decoded in one pass:
// whether it is a request (an id) or a response to one of the session's
// own requests (a result or an error, no method).
// Every member is kept raw, so that only a line that is not JSON fails to
// decode here; mcp-go judges the rest.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// isRequest: the message has an id that is not null (a notification has
// none; a response to the session's own request is routed before).
func (m *message) isRequest() bool {
	return len(m.ID) > 0 && string(m.ID) != "null"
}

// id returns the message's id as mcp-go takes it.
func (m *message) id() any {
	var v any
	_ = json.Unmarshal(m.ID, &v)
	return v
}

// route hands m to the request it answers, if it is a response to one of
// the session's requests still waiting.
func (s *session) route(m *message) bool {
	if m.Method != nil || (m.Result == nil && m.Error == nil) {
		return false
	}
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		return false
	}
	var failure *mcp.JSONRPCErrorDetails
	if m.Error != nil && json.Unmarshal(m.Error, &failure) != nil {
		return false
	}
	s.mu.Lock()
	answer, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if ok {
		answer <- clientResponse{result: m.Result, err: failure}
	}
	return ok
}
