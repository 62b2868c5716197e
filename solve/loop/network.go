package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/solve/record"
	"github.com/llmkernels/kernels/solve/store"
)

// A tool runs without network unless a person allowed it. Its registry
// entry's metadata holds what it declares it needs ("network", from a
// built tool's answer) and what a person allowed ("network_allowed": at
// hire time, or later with AllowNetwork).
const (
	metaNetwork        = "network"
	metaNetworkAllowed = "network_allowed"
)

// strings of a metadata list (JSON arrays decode as []any).
func metaList(e record.Resolver, key string) []string {
	var out []string
	switch v := e.Metadata[key].(type) {
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = v
	}
	return out
}

// DeclaredNetwork is what a tool says it needs to reach.
func DeclaredNetwork(e record.Resolver) []string { return metaList(e, metaNetwork) }

// AllowedNetwork is what a person allowed a tool to reach (nothing unless
// allowed).
func AllowedNetwork(e record.Resolver) []string { return metaList(e, metaNetworkAllowed) }

// NetworkLine says, for a listing, what a tool declares and what it was
// allowed; "" for a tool that neither declares nor was allowed anything.
func NetworkLine(e record.Resolver) string {
	declared, allowed := DeclaredNetwork(e), AllowedNetwork(e)
	switch {
	case len(allowed) > 0:
		return "network allowed: " + strings.Join(allowed, ", ")
	case len(declared) > 0:
		return "network declared, not allowed: " + strings.Join(declared, ", ") + " (solve resolvers allow " + e.ID + " --network)"
	}
	return ""
}

// CheckNetwork checks a list of network needs (host:port or all).
func CheckNetwork(network []string) error {
	_, _, err := proc.NetworkPorts(network)
	return err
}

// ErrNoNetworkDeclared refuses to allow the network to a resolver that
// declares no need of it.
var ErrNoNetworkDeclared = errors.New("it declares no network need, so there is nothing to allow (a hired command's network is allowed when it is hired)")

// AllowNetwork records a person's allowance for the registered tool id:
// what it declares. It is recorded in the registry (and shown by solve
// resolvers) and applies to every later run of the tool.
func AllowNetwork(ctx context.Context, st *store.Store, id string) ([]string, error) {
	rs, err := st.Resolvers(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("no resolver %q (list them with solve resolvers)", id)
	}
	e := rs[0]
	declared := DeclaredNetwork(e)
	if len(declared) == 0 {
		return nil, fmt.Errorf("resolver %s: %w", id, ErrNoNetworkDeclared)
	}
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	e.Metadata[metaNetworkAllowed] = declared
	if err := st.UpsertResolver(ctx, e); err != nil {
		return nil, err
	}
	return declared, nil
}
