package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/llm"
)

// Usage is what the LLM calls of one kind cost, summed: tokens by how the
// API billed them, and dollars.
type Usage struct {
	Calls   int       `json:"calls"`
	Tokens  llm.Usage `json:"tokens"`
	CostUSD float64   `json:"cost_usd"`
	// ScriptedUSD is the part of CostUSD metered on a scripted provider
	// (llm.Client.Scripted): what the model would charge, nothing
	// charged. Whatever shows CostUSD labels this part (llm.ScriptedNote).
	ScriptedUSD float64 `json:"scripted_usd,omitempty"`
}

// ScriptedPart labels the scripted part of the money, to follow the cost
// line that shows it: "; of it, $0.0123 scripted: what the kernel's models
// would charge; nothing is charged", or "" when none of it was scripted.
func (u Usage) ScriptedPart() string {
	if u.ScriptedUSD <= 0 {
		return ""
	}
	return fmt.Sprintf("; of it, $%.4f %s", u.ScriptedUSD, llm.ScriptedNote())
}

// Kinds of usage AddUsage keeps apart.
const (
	UsageWake = "wake" // the calls the wake triggers' wakes made
	UsageCall = "call" // every other call: chat, boot, the web page
)

// usageKey is the setting a day's usage of a kind is kept under; keys of
// one kind sort by day.
func usageKey(kind, day string) string { return "usage:" + kind + ":" + day }

// AddUsage adds the usage of calls answered calls to the day's tally of
// its kind, in one statement, so that processes sharing the store (serve,
// wake --daemon) never lose each other's calls. With scripted the calls
// were metered on a scripted provider, and their cost is also added to the
// tally's scripted part.
func (s *Store) AddUsage(ctx context.Context, kind, day string, calls int, u llm.Usage, costUSD float64, scripted bool) error {
	one := Usage{Calls: calls, Tokens: u, CostUSD: costUSD}
	if scripted {
		one.ScriptedUSD = costUSD
	}
	text, err := json.Marshal(one)
	if err != nil {
		return err
	}
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = json_object(
				'calls', json_extract(value, '$.calls') + json_extract(excluded.value, '$.calls'),
				'tokens', json_object(
					'input_tokens', json_extract(value, '$.tokens.input_tokens') + json_extract(excluded.value, '$.tokens.input_tokens'),
					'output_tokens', json_extract(value, '$.tokens.output_tokens') + json_extract(excluded.value, '$.tokens.output_tokens'),
					'cache_creation_input_tokens', json_extract(value, '$.tokens.cache_creation_input_tokens') + json_extract(excluded.value, '$.tokens.cache_creation_input_tokens'),
					'cache_read_input_tokens', json_extract(value, '$.tokens.cache_read_input_tokens') + json_extract(excluded.value, '$.tokens.cache_read_input_tokens')),
				'cost_usd', json_extract(value, '$.cost_usd') + json_extract(excluded.value, '$.cost_usd'),
				-- a tally kept before the scripted part existed has none: 0
				'scripted_usd', coalesce(json_extract(value, '$.scripted_usd'), 0) + coalesce(json_extract(excluded.value, '$.scripted_usd'), 0))`,
			usageKey(kind, day), string(text))
		if err != nil {
			return fmt.Errorf("adding a call's usage: %w", err)
		}
		return nil
	})
}

// UsageSince sums the usage of a kind ("" for every kind) on the days
// from fromDay (YYYY-MM-DD) on.
func (s *Store) UsageSince(ctx context.Context, kind, fromDay string) (Usage, error) {
	var total Usage
	for _, k := range []string{UsageWake, UsageCall} {
		if kind != "" && kind != k {
			continue
		}
		days, err := listSettings(ctx, s, usageKey(k, fromDay), usageKey(k, "~"))
		if err != nil {
			return total, err
		}
		for _, v := range days {
			var u Usage
			if err := json.Unmarshal([]byte(v), &u); err != nil {
				return total, fmt.Errorf("the usage kept in the store is damaged (%w)", err)
			}
			total.Calls += u.Calls
			total.Tokens = total.Tokens.Add(u.Tokens)
			total.CostUSD += u.CostUSD
			total.ScriptedUSD += u.ScriptedUSD
		}
	}
	return total, nil
}

// listSettings is the values of the settings whose keys are in [from, to).
func listSettings(ctx context.Context, s *Store, from, to string) ([]string, error) {
	return sqldb.List(ctx, s.db.QueryContext, "usage", func(r *sql.Rows) (string, error) {
		var v string
		return v, r.Scan(&v)
	}, `SELECT value FROM settings WHERE key >= ? AND key < ?`, from, to)
}
