package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmkernels/kernels/internal/atomicfile"
)

// blobs is the content-addressed artifact store beside kernel.db: one
// file per content, named by its sha256. Artifact rows point at it.
type blobs struct{ dir string }

// put writes content under its sha256 (atomically, so a crash leaves
// either no file or the whole one) and returns the hash.
func (b *blobs) put(content []byte) (string, error) {
	sum := sha256.Sum256(content)
	h := hex.EncodeToString(sum[:])
	final := filepath.Join(b.dir, h)
	if _, err := os.Stat(final); err == nil {
		return h, nil
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return "", fmt.Errorf("artifact store %s: %w", b.dir, err)
	}
	if err := atomicfile.Write(final, content, 0o644); err != nil {
		return "", fmt.Errorf("artifact store: %w", err)
	}
	return h, nil
}

// get reads the content named sha and checks that it hashes to its name.
func (b *blobs) get(sha string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(b.dir, sha))
	if err != nil {
		return nil, fmt.Errorf("content %s missing from the artifact store: %w", sha, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != sha {
		return nil, fmt.Errorf("content artifact_store/%s does not hash to its name; the artifact store is corrupt", sha)
	}
	return data, nil
}

// BlobExists reports whether the artifact store holds the content named sha.
func (c *Conn) BlobExists(sha string) bool {
	_, err := os.Stat(filepath.Join(c.blobs.dir, sha))
	return err == nil
}

// NewArtifact is an artifact to register.
type NewArtifact struct {
	Node, Type, Format string
	Content            []byte
	Metadata           map[string]any
	ResolverID         string
	ConstraintIDs      []string
	InputIDs           []string
	Sigma              *float64
}

// PutArtifact stores the content and inserts the artifacts row.
func (c *Conn) PutArtifact(ctx context.Context, a NewArtifact) (string, error) {
	h, err := c.blobs.put(a.Content)
	if err != nil {
		return "", fmt.Errorf("store %s artifact of node %s: %w", a.Type, Short(a.Node), err)
	}
	id := NewID()
	meta := a.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	lineage := map[string]any{"node_id": a.Node, "resolver_id": a.ResolverID, "constraint_ids": nonNil(a.ConstraintIDs), "input_artifact_ids": nonNil(a.InputIDs)}
	var sigma any
	if a.Sigma != nil {
		sigma = *a.Sigma
	}
	if _, err := c.exec(ctx, `INSERT INTO artifacts (id, node_id, type, format, uri, sha256, size_bytes, metadata, lineage, sigma, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, a.Node, a.Type, a.Format, "artifact_store/"+h, h, len(a.Content), JSONText(meta), JSONText(lineage), sigma, now()); err != nil {
		return "", fmt.Errorf("insert %s artifact of node %s: %w", a.Type, Short(a.Node), err)
	}
	return id, nil
}

// Artifact is an artifacts row (its content is in the artifact store).
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

const artifactCols = "a.id, a.node_id, a.type, a.format, a.uri, a.sha256, COALESCE(a.size_bytes, 0), a.metadata, a.lineage, a.sigma"

func scanArtifact(r interface{ Scan(...any) error }) (Artifact, error) {
	var a Artifact
	var meta, lineage string
	var sigma sql.NullFloat64
	err := r.Scan(&a.ID, &a.Node, &a.Type, &a.Format, &a.URI, &a.SHA256, &a.Size, &meta, &lineage, &sigma)
	a.Metadata, a.Lineage = json.RawMessage(meta), json.RawMessage(lineage)
	if sigma.Valid {
		a.Sigma = &sigma.Float64
	}
	return a, err
}

// ArtifactInfo loads an artifacts row without its content.
func (c *Conn) ArtifactInfo(ctx context.Context, id string) (*Artifact, error) {
	a, err := scanArtifact(c.row(ctx, "SELECT "+artifactCols+" FROM artifacts a WHERE a.id = ?", id))
	if err != nil {
		return nil, fmt.Errorf("load artifact %s: %w", id, err)
	}
	return &a, nil
}

// Artifact loads an artifact and its content, checked against its hash.
func (c *Conn) Artifact(ctx context.Context, id string) (*Artifact, []byte, error) {
	a, err := c.ArtifactInfo(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	data, err := c.blobs.get(a.SHA256)
	if err != nil {
		return nil, nil, fmt.Errorf("artifact %s: %w", id, err)
	}
	return a, data, nil
}

// LatestArtifact is the newest artifact of a type on a node (nil when none).
func (c *Conn) LatestArtifact(ctx context.Context, node, typ string) (*Artifact, error) {
	a, err := scanArtifact(c.row(ctx, "SELECT "+artifactCols+" FROM artifacts a WHERE a.node_id = ? AND a.type = ? ORDER BY a.{seq} DESC LIMIT 1", node, typ))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("node %s: look up its %s artifact: %w", node, typ, err)
	}
	return &a, nil
}

// CapabilityGap is the node's newest capability_gap artifact recorded at
// the given attempt count ("" when none).
func (c *Conn) CapabilityGap(ctx context.Context, node string, attemptCount int) (string, error) {
	var id string
	err := c.row(ctx, "SELECT id FROM artifacts WHERE node_id = ? AND type = 'capability_gap' AND CAST(metadata->>'attempt_count' AS INTEGER) = ? ORDER BY {seq} DESC LIMIT 1",
		node, attemptCount).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("node %s: look up its capability gap: %w", node, err)
	}
	return id, nil
}

// SetArtifactSigma records an artifact's confidence.
func (c *Conn) SetArtifactSigma(ctx context.Context, id string, sigma float64) error {
	if _, err := c.exec(ctx, "UPDATE artifacts SET sigma = ? WHERE id = ?", sigma, id); err != nil {
		return fmt.Errorf("artifact %s: set sigma: %w", id, err)
	}
	return nil
}

// Artifacts lists the artifacts of the runs whose root id starts with
// rootPrefix ("" = every run), oldest first.
func (c *Conn) Artifacts(ctx context.Context, rootPrefix string) ([]Artifact, error) {
	return list(ctx, c, "list artifacts", func(r *sql.Rows) (Artifact, error) { return scanArtifact(r) }, "SELECT "+artifactCols+" FROM artifacts a JOIN nodes n ON n.id = a.node_id WHERE ? = '' OR n.root_id LIKE ? || '%' ORDER BY a.{seq}", rootPrefix, rootPrefix)
}
