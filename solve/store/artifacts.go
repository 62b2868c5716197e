package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/solve/record"
)

// blobStore keeps artifact contents by their sha256. Artifact rows point
// at it (uri). SQLite's is the artifact_store/ directory beside kernel.db
// (fileBlobs); PostgreSQL's is the artifact_blobs table (tableBlobs), so
// that every process on every machine that reaches the database reaches
// the contents, and a content is committed with its artifact row.
type blobStore interface {
	// put keeps content (c: the transaction of the artifact row) and
	// returns its sha256.
	put(ctx context.Context, c *Conn, content []byte) (string, error)
	// get reads the content named sha, checked against its hash.
	get(ctx context.Context, c *Conn, sha string) ([]byte, error)
	exists(ctx context.Context, c *Conn, sha string) (bool, error)
	// uri is what an artifact row's uri says for the content sha.
	uri(sha string) string
}

func hashOf(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// checked is data, or an error when it does not hash to sha.
func checked(where, sha string, data []byte) ([]byte, error) {
	if hashOf(data) != sha {
		return nil, fmt.Errorf("content %s does not hash to its name; the artifact store is corrupt", where)
	}
	return data, nil
}

// fileBlobs is the content-addressed artifact store beside kernel.db: one
// file per content, named by its sha256.
type fileBlobs struct{ dir string }

// put writes content under its sha256 (atomically, so a crash leaves
// either no file or the whole one).
func (b *fileBlobs) put(_ context.Context, _ *Conn, content []byte) (string, error) {
	h := hashOf(content)
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

func (b *fileBlobs) get(_ context.Context, _ *Conn, sha string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(b.dir, sha))
	if err != nil {
		return nil, fmt.Errorf("content %s missing from the artifact store: %w", sha, err)
	}
	return checked(b.uri(sha), sha, data)
}

func (b *fileBlobs) exists(_ context.Context, _ *Conn, sha string) (bool, error) {
	_, err := os.Stat(filepath.Join(b.dir, sha))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (b *fileBlobs) uri(sha string) string { return "artifact_store/" + sha }

// tableBlobs keeps contents in PostgreSQL's artifact_blobs table (bytea
// keyed by sha256), written in the artifact row's transaction.
type tableBlobs struct{}

func (tableBlobs) put(ctx context.Context, c *Conn, content []byte) (string, error) {
	h := hashOf(content)
	if _, err := c.exec(ctx, "INSERT INTO artifact_blobs (sha256, content) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING", h, content); err != nil {
		return "", fmt.Errorf("artifact_blobs: store %s: %w", h, err)
	}
	return h, nil
}

func (b tableBlobs) get(ctx context.Context, c *Conn, sha string) ([]byte, error) {
	var data []byte
	if err := c.row(ctx, "SELECT content FROM artifact_blobs WHERE sha256 = ?", sha).Scan(&data); err != nil {
		return nil, fmt.Errorf("content %s missing from artifact_blobs: %w", sha, err)
	}
	return checked(b.uri(sha), sha, data)
}

func (tableBlobs) exists(ctx context.Context, c *Conn, sha string) (bool, error) {
	var n int
	if err := c.row(ctx, "SELECT COUNT(*) FROM artifact_blobs WHERE sha256 = ?", sha).Scan(&n); err != nil {
		return false, fmt.Errorf("artifact_blobs: look up %s: %w", sha, err)
	}
	return n > 0, nil
}

func (tableBlobs) uri(sha string) string { return "artifact_blobs/" + sha }

// BlobExists reports whether the artifact store holds the content named sha.
func (c *Conn) BlobExists(ctx context.Context, sha string) (bool, error) {
	return c.blobs.exists(ctx, c, sha)
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
	h, err := c.blobs.put(ctx, c, a.Content)
	if err != nil {
		return "", fmt.Errorf("store %s artifact of node %s: %w", a.Type, Short(a.Node), err)
	}
	id := NewID()
	meta := a.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	lineage := map[string]any{"node_id": a.Node, "resolver_id": a.ResolverID, "constraint_ids": plainjson.List(a.ConstraintIDs), "input_artifact_ids": plainjson.List(a.InputIDs)}
	var sigma any
	if a.Sigma != nil {
		sigma = *a.Sigma
	}
	if _, err := c.exec(ctx, `INSERT INTO artifacts (id, node_id, type, format, uri, sha256, size_bytes, metadata, lineage, sigma, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, a.Node, a.Type, a.Format, c.blobs.uri(h), h, len(a.Content), asJSON(meta), asJSON(lineage), sigma, now()); err != nil {
		return "", fmt.Errorf("insert %s artifact of node %s: %w", a.Type, Short(a.Node), err)
	}
	return id, nil
}

const artifactCols = "a.id, a.node_id, a.type, a.format, a.uri, a.sha256, COALESCE(a.size_bytes, 0), a.metadata, a.lineage, a.sigma"

func scanArtifact(r interface{ Scan(...any) error }) (record.Artifact, error) {
	var a record.Artifact
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
func (c *Conn) ArtifactInfo(ctx context.Context, id string) (*record.Artifact, error) {
	a, err := scanArtifact(c.row(ctx, "SELECT "+artifactCols+" FROM artifacts a WHERE a.id = ?", id))
	if err != nil {
		return nil, fmt.Errorf("load artifact %s: %w", id, err)
	}
	return &a, nil
}

// Artifact loads an artifact and its content, checked against its hash.
func (c *Conn) Artifact(ctx context.Context, id string) (*record.Artifact, []byte, error) {
	a, err := c.ArtifactInfo(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	data, err := c.blobs.get(ctx, c, a.SHA256)
	if err != nil {
		return nil, nil, fmt.Errorf("artifact %s: %w", id, err)
	}
	return a, data, nil
}

// LatestArtifact is the newest artifact of a type on a node (nil when none).
func (c *Conn) LatestArtifact(ctx context.Context, node, typ string) (*record.Artifact, error) {
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
func (c *Conn) Artifacts(ctx context.Context, rootPrefix string) ([]record.Artifact, error) {
	return sqldb.List(ctx, c.query, "list artifacts", func(r *sql.Rows) (record.Artifact, error) { return scanArtifact(r) }, "SELECT "+artifactCols+" FROM artifacts a JOIN nodes n ON n.id = a.node_id WHERE ? = '' OR n.root_id LIKE ? || '%' ORDER BY a.{seq}", rootPrefix, rootPrefix)
}
