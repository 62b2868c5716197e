package solve

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmkernels/kernels/internal/atomicfile"
)

// artifactDir is the content-addressed store beside kernel.db.
func (k *Kernel) artifactDir() string { return filepath.Join(filepath.Dir(k.path), "artifact_store") }

// storeBlob writes content under its sha256 (atomically, so a crash
// leaves either no file or the whole one) and returns the hash.
func (k *Kernel) storeBlob(content []byte) (string, error) {
	sum := sha256.Sum256(content)
	h := hex.EncodeToString(sum[:])
	dir := k.artifactDir()
	final := filepath.Join(dir, h)
	if _, err := os.Stat(final); err == nil {
		return h, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("artifact store %s: %w", dir, err)
	}
	if err := atomicfile.Write(final, content, 0o644); err != nil {
		return "", fmt.Errorf("artifact store: %w", err)
	}
	return h, nil
}

// artifactIn is an artifact to register.
type artifactIn struct {
	Node, Type, Format string
	Content            []byte
	Metadata           map[string]any
	ResolverID         string
	ConstraintIDs      []string
	InputIDs           []string
	Sigma              *float64
}

// putArtifact stores the blob and inserts the artifacts row in q.
func (k *Kernel) putArtifact(ctx context.Context, q execer, a artifactIn) (string, error) {
	h, err := k.storeBlob(a.Content)
	if err != nil {
		return "", err
	}
	id := newID()
	meta := a.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	lineage := map[string]any{"node_id": a.Node, "resolver_id": a.ResolverID, "constraint_ids": nonNil(a.ConstraintIDs), "input_artifact_ids": nonNil(a.InputIDs)}
	var sigma any
	if a.Sigma != nil {
		sigma = *a.Sigma
	}
	_, err = q.ExecContext(ctx, `INSERT INTO artifacts (id, node_id, type, format, uri, sha256, size_bytes, metadata, lineage, sigma, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, a.Node, a.Type, a.Format, "artifact_store/"+h, h, len(a.Content), jsonText(meta), jsonText(lineage), sigma, now())
	return id, err
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Artifact is one artifacts row.
type Artifact struct {
	ID       string  `json:"id"`
	Node     string  `json:"node_id"`
	Type     string  `json:"type"`
	Format   string  `json:"format"`
	URI      string  `json:"uri"`
	SHA256   string  `json:"sha256"`
	Size     int     `json:"size_bytes"`
	Metadata string  `json:"metadata"`
	Lineage  string  `json:"lineage"`
	Sigma    float64 `json:"sigma"`
}

func (k *Kernel) artifact(ctx context.Context, q querier, id string) (*Artifact, []byte, error) {
	var a Artifact
	var sigma sql.NullFloat64
	err := q.QueryRowContext(ctx, "SELECT id, node_id, type, format, uri, sha256, size_bytes, metadata, lineage, sigma FROM artifacts WHERE id = ?", id).
		Scan(&a.ID, &a.Node, &a.Type, &a.Format, &a.URI, &a.SHA256, &a.Size, &a.Metadata, &a.Lineage, &sigma)
	if err != nil {
		return nil, nil, fmt.Errorf("artifact %s: %w", id, err)
	}
	a.Sigma = sigma.Float64
	data, err := os.ReadFile(filepath.Join(k.artifactDir(), a.SHA256))
	if err != nil {
		return nil, nil, fmt.Errorf("artifact %s: content %s missing from the artifact store: %w", id, a.SHA256, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != a.SHA256 {
		return nil, nil, fmt.Errorf("artifact %s: content of %s does not hash to its name; the artifact store is corrupt", id, a.URI)
	}
	return &a, data, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
