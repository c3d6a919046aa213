package worker

import "github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"

func (ex *executor) search() (*ipc.Response, error) {
	return nil, ipc.NewError(ipc.CodeInvalidArgument, "search_text is not available in this build")
}
