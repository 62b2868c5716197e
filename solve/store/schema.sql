-- kernel.db, planning mode: 5 of the spec's 11 tables (§2 A and E), exactly as
-- the spec defines them, so `solve run` can add the other six beside them.

-- Canonical constraints (typed logic|semantic; payload is open-ended)
CREATE TABLE IF NOT EXISTS constraints (
    id          TEXT PRIMARY KEY,
    type        TEXT NOT NULL,               -- logic | semantic
    domain      TEXT,                        -- e.g. software, cost, schedule, security
    title       TEXT NOT NULL,               -- short human label
    payload     JSON NOT NULL,               -- checker spec (logic) or rubric (semantic)
    provenance  JSON NOT NULL,               -- {source, resolver_id, derived_from_constraint_ids[]}
    created_at  TEXT DEFAULT (datetime('now'))
);

CREATE INDEX IF NOT EXISTS idx_constraints_type ON constraints(type);
CREATE INDEX IF NOT EXISTS idx_constraints_domain ON constraints(domain);

-- Resolution attempts (the TRY loop history for a node's step-5 resolver runs)
CREATE TABLE IF NOT EXISTS resolution_attempts (
    id              TEXT PRIMARY KEY,
    node_id         TEXT NOT NULL,
    attempt_index   INTEGER NOT NULL,        -- 1..T_max
    resolver_id     TEXT NOT NULL,
    plan_artifact_id    TEXT,                -- tool_plan used for this attempt (required once selection is done)
    input_artifact_ids  JSON NOT NULL DEFAULT '[]',
    output_artifact_id  TEXT,                -- set after RESOLVE
    feedback        JSON,                    -- violation trace from prior attempt (if any)
    verification    JSON,                    -- Verification object (set after VERIFY)
    verdict         TEXT,                    -- SAT | UNSAT (denormalized from verification)
    sigma_v         REAL,                    -- denormalized from verification
    failure_mode    TEXT,                    -- failure:<slug> (optional)
    cost            REAL DEFAULT 0,
    time_seconds    REAL DEFAULT 0,
    created_at      TEXT DEFAULT (datetime('now')),
    UNIQUE (node_id, attempt_index)
);

CREATE INDEX IF NOT EXISTS idx_attempts_node ON resolution_attempts(node_id, created_at);
CREATE INDEX IF NOT EXISTS idx_attempts_resolver ON resolution_attempts(resolver_id, created_at);

-- The goal tree (state machine)
CREATE TABLE IF NOT EXISTS nodes (
    id              TEXT PRIMARY KEY,
    parent_id       TEXT REFERENCES nodes(id),
    root_id         TEXT NOT NULL,           -- stable root for this run/tree

    goal_description TEXT NOT NULL,
    goal_summary    TEXT NOT NULL,           -- short summary used for KG/prompt injection
    goal_modality   TEXT NOT NULL,           -- text, code, image, sketch, etc.
    goal_artifact_id TEXT,                   -- optional: artifact id when goal is non-text

    status          TEXT NOT NULL DEFAULT 'pending',
        -- pending | identifying_constraints | selecting_constraints |
        -- selecting_resolver | resolving | verifying |
        -- decomposing | gated | resolved | infeasible

    leaf_kind       TEXT,                    -- atomic | off_the_shelf | contracted | constraint_exhausted
    leaf_reason     TEXT,

    -- Constraint sets (JSON arrays of constraint IDs; canonical objects live in constraints table)
    constraints_core_ids        JSON NOT NULL DEFAULT '[]',  -- human-seeded irreducible core
    constraints_eligible_ids    JSON NOT NULL DEFAULT '[]',  -- step 2 output
    constraints_selected_ids    JSON NOT NULL DEFAULT '[]',  -- step 3 output (C_v*)
    constraints_inherited_ids   JSON NOT NULL DEFAULT '[]',  -- ancestors' resolved constraints (assumed true)
    constraints_resolved_ids    JSON NOT NULL DEFAULT '[]',  -- constraints proven SAT at this node

    resolver_id     TEXT,
    execution_plan_artifact_id TEXT,         -- selected tool_plan for step 5
    input_artifact_ids  JSON NOT NULL DEFAULT '[]',
    output_artifact_id  TEXT,
    last_attempt_id     TEXT,                -- points at resolution_attempts.id
    verification        JSON,                -- last Verification (denormalized from last_attempt_id)

    sigma_v         REAL,                    -- last node-level confidence
    sigma_path      REAL,                    -- product along root→node path (stored for auditability)
    tau_local       REAL NOT NULL,           -- copied from config at node creation
    tau_global      REAL NOT NULL,           -- copied from config at node creation

    attempt_count   INTEGER DEFAULT 0,
    max_attempts    INTEGER DEFAULT 5,       -- T_max

    -- Budget cache (authoritative source is budget_ledger)
    budget_allocated REAL DEFAULT 0,
    budget_spent     REAL DEFAULT 0,
    time_allocated   REAL DEFAULT 0,         -- seconds
    time_spent       REAL DEFAULT 0,

    -- Metadata
    created_at      TEXT DEFAULT (datetime('now')),
    resolved_at     TEXT
);

CREATE TABLE IF NOT EXISTS node_dependencies (
    node_id         TEXT REFERENCES nodes(id),
    depends_on      TEXT REFERENCES nodes(id),  -- must be resolved before node_id can execute
    PRIMARY KEY (node_id, depends_on)
);

CREATE INDEX IF NOT EXISTS idx_nodes_parent ON nodes(parent_id);
CREATE INDEX IF NOT EXISTS idx_nodes_root ON nodes(root_id);
CREATE INDEX IF NOT EXISTS idx_nodes_status ON nodes(status, created_at);

-- Tiered log
CREATE TABLE IF NOT EXISTS logs (
    id              TEXT PRIMARY KEY,
    tier            INTEGER NOT NULL,        -- 1, 2, or 3
    node_id         TEXT,
    timestamp       TEXT DEFAULT (datetime('now')),
    category        TEXT,                    -- flow | decision | io
    summary         TEXT,                    -- human-readable (tier 1)
    detail          JSON                     -- structured data (tier 2, 3)
);

CREATE INDEX IF NOT EXISTS idx_logs_tier ON logs(tier, timestamp);
CREATE INDEX IF NOT EXISTS idx_logs_node ON logs(node_id, tier);

-- kernel.db, SOLVE loop (`solve run`, schema version 2): the other six of
-- the spec's eleven tables (§2 A–D), exactly as the spec defines them.

-- Canonical artifacts (content lives at uri; lineage is required for auditability)
CREATE TABLE IF NOT EXISTS artifacts (
    id          TEXT PRIMARY KEY,
    node_id     TEXT NOT NULL,               -- producing node
    type        TEXT NOT NULL,               -- code | doc | data | resolver | tool_plan | ...
    format      TEXT NOT NULL,               -- python | markdown | json | ...
    uri         TEXT NOT NULL,               -- e.g. artifact_store/<sha256> or external ref
    sha256      TEXT NOT NULL,               -- content hash (required for local storage)
    size_bytes  INTEGER,
    metadata    JSON NOT NULL DEFAULT '{}',
    lineage     JSON NOT NULL,               -- {resolver_id, constraint_ids[], input_artifact_ids[]}
    sigma       REAL,                        -- artifact-local confidence (optional; node-level is authoritative)
    created_at  TEXT DEFAULT (datetime('now'))
);

CREATE INDEX IF NOT EXISTS idx_artifacts_node ON artifacts(node_id, created_at);
CREATE INDEX IF NOT EXISTS idx_artifacts_sha ON artifacts(sha256);

-- Capability request dedupe (enables "never ask twice for the same request")
-- request_fingerprint = sha256(canonical_json({capability_tag, build_constraints, budget_class}))
CREATE TABLE IF NOT EXISTS capability_requests (
    id                  TEXT PRIMARY KEY,
    root_id             TEXT NOT NULL,
    capability_tag      TEXT NOT NULL,
    request_fingerprint TEXT NOT NULL,
    status              TEXT NOT NULL,       -- requested | delivered | declined
    resolver_id         TEXT,                -- set when delivered
    detail              JSON,                -- human-visible context + reasons
    created_at          TEXT DEFAULT (datetime('now')),
    UNIQUE (root_id, capability_tag, request_fingerprint)
);

CREATE INDEX IF NOT EXISTS idx_capreq_lookup ON capability_requests(capability_tag, status);

-- Resolver registry (§2B)
CREATE TABLE IF NOT EXISTS resolvers (
    id              TEXT PRIMARY KEY,
    label           TEXT NOT NULL,            -- human-readable name
    description     TEXT,                     -- free-text description (non-rigid; used by router at boot)
    type            TEXT NOT NULL,            -- digital | physical | hybrid
    capabilities    JSON NOT NULL,            -- ["decompose", "generate_code", ...]
    cost_per_invocation REAL,
    cost_per_token  REAL,
    latency_estimate REAL,                    -- seconds

    -- Quality vector (formalization §4)
    q_completeness  REAL DEFAULT 0.5,
    q_executability REAL DEFAULT 0.5,
    q_optimality    REAL DEFAULT 0.5,
    q_representation REAL DEFAULT 0.5,
    q_generalization REAL DEFAULT 0.5,
    q_efficiency    REAL DEFAULT 0.5,

    input_types     JSON,                     -- ["text", "code", ...]
    output_types    JSON,                     -- ["text", "code", "structured_data", ...]

    -- Usage stats (updated by resolution logger)
    usage_count     INTEGER DEFAULT 0,
    success_count   INTEGER DEFAULT 0,
    failure_count   INTEGER DEFAULT 0,
    avg_cost        REAL DEFAULT 0,

    -- Provenance
    built_by        TEXT,                     -- "boot" | "system" | "human"
    built_for_node_id TEXT,                   -- node_id that triggered construction
    metadata        JSON NOT NULL DEFAULT '{}',
    created_at      TEXT DEFAULT (datetime('now'))
);

-- Knowledge graph (§2C)
CREATE TABLE IF NOT EXISTS kg_nodes (
    id              TEXT PRIMARY KEY,
    type            TEXT NOT NULL,
    label           TEXT NOT NULL,            -- human-readable summary
    properties      JSON,                     -- type-specific data
    created_at      TEXT DEFAULT (datetime('now'))
);

CREATE TABLE IF NOT EXISTS kg_edges (
    id              TEXT PRIMARY KEY,
    source_id       TEXT NOT NULL REFERENCES kg_nodes(id),
    target_id       TEXT NOT NULL REFERENCES kg_nodes(id),
    relation        TEXT NOT NULL,
    properties      JSON,                     -- edge-specific data (e.g., sigma_v, cost, time_seconds, timestamp)
    created_at      TEXT DEFAULT (datetime('now'))
);

CREATE INDEX IF NOT EXISTS idx_kg_edges_source ON kg_edges(source_id, relation);
CREATE INDEX IF NOT EXISTS idx_kg_edges_target ON kg_edges(target_id, relation);
CREATE INDEX IF NOT EXISTS idx_kg_edges_relation ON kg_edges(relation);
CREATE INDEX IF NOT EXISTS idx_kg_nodes_type ON kg_nodes(type);
CREATE INDEX IF NOT EXISTS idx_kg_nodes_label ON kg_nodes(type, label);

-- Budget ledger (§2D): authoritative; nodes.budget_* / time_* are caches.
CREATE TABLE IF NOT EXISTS budget_ledger (
    id              TEXT PRIMARY KEY,
    node_id         TEXT NOT NULL REFERENCES nodes(id),
    event_type      TEXT NOT NULL,           -- allocate | spend | refund
    amount          REAL NOT NULL,
    time_amount     REAL DEFAULT 0,          -- seconds
    resolver_id     TEXT,
    description     TEXT,
    created_at      TEXT DEFAULT (datetime('now'))
);

CREATE INDEX IF NOT EXISTS idx_ledger_node ON budget_ledger(node_id, event_type);
