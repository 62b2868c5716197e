package solve

import (
	"context"

	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/record"
)

// The kernel's own records, as the read side returns them (solve log,
// artifacts, resolvers, hire --json): the store's rows as they are.
type (
	// LogEntry is one row of the tiered log.
	LogEntry = record.LogEntry
	// Artifact is a stored artifact's record, without its content.
	Artifact = record.Artifact
	// Resolver is an entry of the resolver registry.
	Resolver = record.Resolver
	// CapabilityRequest is a HIRE request: a capability the run lacks,
	// and what a person is asked.
	CapabilityRequest = record.CapabilityRequest
)

// NetworkLine is what the registry listing says of the network a built
// or hired tool declared and was allowed ("" when it declared none).
func NetworkLine(r Resolver) string { return loop.NetworkLine(r) }

// RequestText renders a capability request with the context the spec
// lists: need, tried, failed because, budget remaining, similar past
// resolutions.
func RequestText(r CapabilityRequest) string { return loop.FormatRequest(r) }

// HireOutcome is what an answer to a capability request did.
type HireOutcome = loop.HireOutcome

// NetworkAllowance is the network a tool was allowed to reach.
type NetworkAllowance struct {
	Resolver string   `json:"resolver_id"`
	Network  []string `json:"network"`
}

// Resolvers lists the registry, the boot resolvers first. Opened for
// writing, it registers them if a run has not; read-only, it lists those
// not registered yet as a run would register them.
func (k *Kernel) Resolvers(ctx context.Context) ([]Resolver, error) {
	var rs []Resolver
	var err error
	if k.st.ReadOnly() {
		rs, err = loop.Registry(ctx, k.st)
	} else if err = loop.Boot(ctx, k.st); err == nil {
		rs, err = k.st.Resolvers(ctx, "")
	}
	if err != nil {
		return nil, err
	}
	return plainjson.List(rs), nil
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
	return plainjson.List(reqs), nil
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
