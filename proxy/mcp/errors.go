package mcp

import (
	"log/slog"

	"github.com/memgate/memgate/memory"
)

// toolErr is a tool error as the agent sees it: the SDK answers it as a
// result with isError set and this text, which is the domain error's
// caller-safe message (server-memory's texts, e.g. "Entity with name x not
// found", come through unchanged).
type toolErr struct{ msg string }

func (e toolErr) Error() string { return e.msg }

// toolError turns an error into a tool error; only internal errors are
// logged, and their details never reach the agent.
func toolError(log *slog.Logger, err error) error {
	if memory.ErrorCode(err) == memory.EINTERNAL {
		log.Error("mcp tool call failed", "err", err)
	}
	return toolErr{msg: memory.ErrorMessage(err)}
}
