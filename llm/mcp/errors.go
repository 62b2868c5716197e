package mcp

import "fmt"

// InvalidError is a server definition that cannot work as given: a bad
// name, a URL that is not http(s), a malformed header. A command answers
// it as a usage error (exit 2). It never holds a secret value.
type InvalidError struct {
	Server  string // the server's name, when it has one
	Field   string // name, url, command, header or env
	Problem string // what is wrong, and what to give instead
}

func (e *InvalidError) Error() string {
	if e.Server == "" {
		return fmt.Sprintf("mcp server: %s: %s", e.Field, e.Problem)
	}
	return fmt.Sprintf("mcp server %q: %s: %s", e.Server, e.Field, e.Problem)
}

// UnreachableError is a well-formed server that did not answer: nothing
// listens at the URL, the command does not start or does not speak MCP,
// the handshake or the tool list failed. A command answers it with exit 1.
// Detail is the cause with every secret of the server replaced by
// "[redacted]" and control characters escaped; the underlying error is not
// kept, since its text may quote a secret.
type UnreachableError struct {
	Server string
	Detail string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("mcp server %q cannot be reached: %s", e.Server, e.Detail)
}

// NotFoundError is a name no server in the registry has.
type NotFoundError struct {
	Name string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no mcp server is named %q (list them to see their names)", e.Name)
}
