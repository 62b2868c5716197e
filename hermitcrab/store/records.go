package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/sqldb"
)

// Shell statuses: a shell is "built" when recompile stores it, then
// "rendered" once a browser showed it or "failed" with the error it gave.
const (
	ShellBuilt    = "built"
	ShellRendered = "rendered"
	ShellFailed   = "failed"
)

// Shell is one shell source produced by recompile.
type Shell struct {
	ID      int64     `json:"id"`
	Source  string    `json:"source"`
	Status  string    `json:"status"`
	Error   string    `json:"error,omitempty"`
	Created time.Time `json:"created"`
}

// SaveConversation stores a conversation's messages (any valid JSON, usually
// the messages array), replacing what was saved under id before.
func (s *Store) SaveConversation(ctx context.Context, id string, messages json.RawMessage) error {
	if id == "" {
		return errors.New("conversation id is empty: give a name such as \"main\"")
	}
	if err := validJSON(messages); err != nil {
		return fmt.Errorf("conversation %q: %w", id, err)
	}
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, messages, updated) VALUES (?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET messages = excluded.messages, updated = excluded.updated`,
			id, string(messages), now())
		if err != nil {
			return fmt.Errorf("saving conversation %q: %w", id, err)
		}
		return nil
	})
}

// Conversation returns the messages saved under id, or an error wrapping
// ErrNotFound that lists the saved conversations.
func (s *Store) Conversation(ctx context.Context, id string) (json.RawMessage, error) {
	var m string
	err := s.db.QueryRowContext(ctx, `SELECT messages FROM conversations WHERE id = ?`, id).Scan(&m)
	if errors.Is(err, sql.ErrNoRows) {
		ids, lerr := s.Conversations(ctx)
		switch {
		case lerr != nil:
			return nil, fmt.Errorf("conversation %q %w (and listing conversations failed: %v)", id, ErrNotFound, lerr)
		case len(ids) == 0:
			return nil, fmt.Errorf("conversation %q %w: no conversation has been saved yet", id, ErrNotFound)
		}
		return nil, fmt.Errorf("conversation %q %w; saved conversations: %s", id, ErrNotFound, strings.Join(ids, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("conversation %q: %w", id, err)
	}
	return json.RawMessage(m), nil
}

// Conversations returns the ids of the saved conversations, sorted.
func (s *Store) Conversations(ctx context.Context) ([]string, error) {
	return sqldb.List(ctx, s.db.QueryContext, "listing conversations", sqldb.Column[string], `SELECT id FROM conversations ORDER BY id`)
}

// AddShell stores a shell source with status ShellBuilt.
func (s *Store) AddShell(ctx context.Context, source string) (Shell, error) {
	sh := Shell{Source: source, Status: ShellBuilt}
	created := now()
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO shells (source, status, error, created) VALUES (?, ?, '', ?)`,
			source, ShellBuilt, created)
		if err != nil {
			return err
		}
		sh.ID, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return Shell{}, fmt.Errorf("storing shell source: %w", err)
	}
	sh.Created, err = parseTime(created)
	return sh, err
}

// SetShellStatus records what became of a shell: ShellBuilt, ShellRendered
// or ShellFailed, with errText saying why it failed ("" otherwise).
func (s *Store) SetShellStatus(ctx context.Context, id int64, status, errText string) error {
	switch status {
	case ShellBuilt, ShellRendered, ShellFailed:
	default:
		return fmt.Errorf("shell %d: status %q: want %q, %q or %q", id, status, ShellBuilt, ShellRendered, ShellFailed)
	}
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE shells SET status = ?, error = ? WHERE id = ?`, status, errText, id)
		if err != nil {
			return fmt.Errorf("shell %d: %w", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("shell %d: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("shell %d %w: give an id from AddShell or Shells", id, ErrNotFound)
		}
		return nil
	})
}

// LatestShell returns the newest shell with the given status ("" for any
// status), or an error wrapping ErrNotFound.
func (s *Store) LatestShell(ctx context.Context, status string) (Shell, error) {
	shells, err := s.shells(ctx, status, 1)
	if err != nil {
		return Shell{}, err
	}
	if len(shells) == 0 {
		if status == "" {
			return Shell{}, fmt.Errorf("shell %w: no shell has been built yet (recompile stores one)", ErrNotFound)
		}
		return Shell{}, fmt.Errorf("shell %w: no shell has status %q", ErrNotFound, status)
	}
	return shells[0], nil
}

// Shells returns the newest limit shells, newest first; limit ≤ 0 means all.
func (s *Store) Shells(ctx context.Context, limit int) ([]Shell, error) {
	return s.shells(ctx, "", limit)
}

func (s *Store) shells(ctx context.Context, status string, limit int) ([]Shell, error) {
	query := `SELECT id, source, status, error, created FROM shells WHERE ? = '' OR status = ? ORDER BY id DESC`
	args := []any{status, status}
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	return sqldb.List(ctx, s.db.QueryContext, "listing shells", func(r *sql.Rows) (Shell, error) {
		var (
			sh      Shell
			created string
		)
		if err := r.Scan(&sh.ID, &sh.Source, &sh.Status, &sh.Error, &created); err != nil {
			return sh, err
		}
		var err error
		if sh.Created, err = parseTime(created); err != nil {
			return sh, fmt.Errorf("shell %d: %w", sh.ID, err)
		}
		return sh, nil
	}, query, args...)
}
