package linkcond

import (
	"fmt"
	"strings"
)

// StartError says why linkcond run did not become ready, with what linkcond wrote to stderr.
type StartError struct {
	// Reason is what happened: it exited, or printed no "ready control" line in time.
	Reason string
	// ExitStatus is linkcond's exit status, -1 when a signal ended it or it was stopped by this client.
	ExitStatus int
	// Stderr is everything linkcond wrote to stderr (its last 256 KiB).
	Stderr string
}

func (e *StartError) Error() string {
	if strings.TrimSpace(e.Stderr) == "" {
		return e.Reason
	}
	return e.Reason + "; its stderr:\n" + strings.TrimRight(e.Stderr, "\n")
}

// APIError is a control request the endpoint refused: its HTTP status and its message.
type APIError struct {
	Method     string
	Path       string
	StatusCode int
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d: %s", e.Method, e.Path, e.StatusCode, e.Message)
}
