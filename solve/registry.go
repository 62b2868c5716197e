package solve

import (
	"context"
	"encoding/json"

	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/store"
)

// The kernel's own records, as the read side returns them (solve log,
// artifacts, resolvers, hire --json): plain copies of the stored rows.

// LogEntry is one row of the tiered log.
type LogEntry struct {
	Tier    int             `json:"tier"`
	Node    string          `json:"node_id"`
	Goal    string          `json:"goal,omitempty"`
	Time    string          `json:"timestamp"` // UTC
	Summary string          `json:"summary"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// Artifact is a stored artifact's record, without its content.
type Artifact struct {
	ID       string          `json:"id"`
	Node     string          `json:"node_id"`
	Type     string          `json:"type"`
	Format   string          `json:"format"`
	URI      string          `json:"uri"`
	SHA256   string          `json:"sha256"`
	Size     int             `json:"size_bytes"`
	Metadata json.RawMessage `json:"metadata"`
	Lineage  json.RawMessage `json:"lineage"`
	Sigma    *float64        `json:"sigma"` // nil when none was recorded
}

// Resolver is an entry of the resolver registry.
type Resolver struct {
	ID                string         `json:"id"`
	Label             string         `json:"label"`
	Description       string         `json:"description"`
	Type              string         `json:"type"`
	Capabilities      []string       `json:"capabilities"`
	CostPerInvocation float64        `json:"cost_per_invocation"`
	CostPerToken      float64        `json:"cost_per_token"`
	LatencyEstimate   float64        `json:"latency_estimate"`
	UsageCount        int            `json:"usage_count"`
	SuccessCount      int            `json:"success_count"`
	FailureCount      int            `json:"failure_count"`
	AvgCost           float64        `json:"avg_cost"`
	BuiltBy           string         `json:"built_by"`
	BuiltForNode      string         `json:"built_for_node_id,omitempty"`
	Metadata          map[string]any `json:"metadata"`
}

// NetworkLine is what the registry listing says of the network a built
// or hired tool declared and was allowed ("" when it declared none).
func (r Resolver) NetworkLine() string { return loop.NetworkLine(store.Resolver(r)) }

// CapabilityRequest is a HIRE request: a capability the run lacks, and
// what a person is asked.
type CapabilityRequest struct {
	ID          string         `json:"id"`
	RootID      string         `json:"root_id"`
	Capability  string         `json:"capability_tag"`
	Fingerprint string         `json:"request_fingerprint"`
	Status      string         `json:"status"`
	ResolverID  string         `json:"resolver_id,omitempty"`
	Detail      map[string]any `json:"detail"`
	// Nodes are the nodes waiting on it, the one that asked first.
	Nodes []string `json:"waiting_node_ids"`
}

// Text renders the request with the context the spec lists: need, tried,
// failed because, budget remaining, similar past resolutions.
func (r CapabilityRequest) Text() string { return loop.FormatRequest(store.CapabilityRequest(r)) }

// HireOutcome is what an answer to a capability request did.
type HireOutcome = loop.HireOutcome

// NetworkAllowance is the network a tool was allowed to reach.
type NetworkAllowance struct {
	Resolver string   `json:"resolver_id"`
	Network  []string `json:"network"`
}

// copies converts stored rows to the kernel's records.
func copies[S ~[]E, E any, T any](rows S, conv func(E) T) []T {
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		out = append(out, conv(r))
	}
	return out
}

// Resolvers lists the registry, the boot resolvers first. Opened for
// writing, it registers them if a run has not; read-only, it lists those
// not registered yet as a run would register them.
func (k *Kernel) Resolvers(ctx context.Context) ([]Resolver, error) {
	var rs []store.Resolver
	var err error
	if k.st.ReadOnly() {
		rs, err = loop.Registry(ctx, k.st)
	} else if err = loop.Boot(ctx, k.st); err == nil {
		rs, err = k.st.Resolvers(ctx, "")
	}
	if err != nil {
		return nil, err
	}
	return copies(rs, func(r store.Resolver) Resolver { return Resolver(r) }), nil
}

// AllowNetwork records a person's allowance for a built tool to reach
// what it declares (solve resolvers allow ID --network).
func (k *Kernel) AllowNetwork(ctx context.Context, id string) (*NetworkAllowance, error) {
	network, err := loop.AllowNetwork(ctx, k.st, id)
	if err != nil {
		return nil, err
	}
	return &NetworkAllowance{Resolver: id, Network: network}, nil
}

// Requests lists the capability requests waiting for a human (all of
// them with all).
func (k *Kernel) Requests(ctx context.Context, all bool) ([]CapabilityRequest, error) {
	reqs, err := k.st.Requests(ctx, all)
	if err != nil {
		return nil, err
	}
	return copies(reqs, func(r store.CapabilityRequest) CapabilityRequest { return CapabilityRequest(r) }), nil
}

// Answer records a human's answer to a capability request (an id
// prefix); the run continues with Resume. An answer it cannot take is an
// OptionError (CheckHireAnswer).
func (k *Kernel) Answer(ctx context.Context, request string, a HireAnswer) (*HireOutcome, error) {
	if err := CheckHireAnswer(a); err != nil {
		return nil, err
	}
	out, err := loop.Answer(ctx, k.st, request, a)
	if err != nil {
		return nil, err
	}
	return &out, nil
}
