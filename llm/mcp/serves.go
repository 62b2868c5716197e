package mcp

import "strings"

// Serves reports whether name is the name one of the set's servers would
// offer a tool under (NAME__tool): the server named by what comes before
// the first "__", exactly as it was added. It connects to nothing, so a
// kernel can tell the servers' tools from its own without waking them.
func (s *Set) Serves(name string) bool {
	server, _, ok := strings.Cut(name, "__")
	if !ok {
		return false
	}
	for _, c := range s.conns {
		if c.srv.Name == server {
			return true
		}
	}
	return false
}
