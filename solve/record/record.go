// Package record holds the kernel's stored records as plain data: the
// store returns them and the solve package hands them out as they are
// (solve log, artifacts, resolvers, hire and kg --json take their shape
// from the JSON tags here). It imports nothing of the kernel, so both
// the store and the public API can stand on it.
package record

import "encoding/json"

// LogEntry is one row of the tiered log, with the goal summary of its node.
type LogEntry struct {
	Tier    int             `json:"tier"`
	Node    string          `json:"node_id"`
	Goal    string          `json:"goal,omitempty"`
	Time    string          `json:"timestamp"` // UTC
	Summary string          `json:"summary"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// Artifact is a stored artifact's record, without its content (that is
// in the artifact store).
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

// Resolver is an entry of the resolver registry (spec §2B).
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
	// Nodes are the nodes waiting on it, in the order they met it: the
	// one that asked (Detail's node_id) first, then any other node of
	// the run that met the same gap; a node invalidated or ended since
	// is left out.
	Nodes []string `json:"waiting_node_ids"`
}

// EdgeCount is how many edges of the knowledge graph have a relation.
type EdgeCount struct {
	Relation string `json:"relation"`
	Count    int    `json:"count"`
}
