package llm

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
)

// Price is what a model family charges, in USD per million tokens.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheWrite float64 `json:"cache_write"`
	CacheRead  float64 `json:"cache_read"`
}

// PriceTable maps a model family (a model-name prefix) to its price. The
// longest family that prefixes a model name prices it, so
// "claude-sonnet-4-5-20250929" is priced by "claude-sonnet-4".
type PriceTable map[string]Price

// DefaultPrices are list prices at the time of writing (cache writes at the
// 5-minute rate). They change: override them with a prices file
// (LoadPrices) rather than trusting them for billing.
var DefaultPrices = PriceTable{
	"claude-opus-4":     {Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.5},
	"claude-opus-4-5":   {Input: 5, Output: 25, CacheWrite: 6.25, CacheRead: 0.5},
	"claude-opus-4-6":   {Input: 5, Output: 25, CacheWrite: 6.25, CacheRead: 0.5},
	"claude-sonnet-4":   {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.3},
	"claude-3-7-sonnet": {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.3},
	"claude-3-5-sonnet": {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.3},
	"claude-haiku-4-5":  {Input: 1, Output: 5, CacheWrite: 1.25, CacheRead: 0.1},
	"claude-3-5-haiku":  {Input: 0.8, Output: 4, CacheWrite: 1, CacheRead: 0.08},
	"claude-3-haiku":    {Input: 0.25, Output: 1.25, CacheWrite: 0.3, CacheRead: 0.03},
	"gpt-4o":            {Input: 2.5, Output: 10, CacheRead: 1.25},
	"gpt-4o-mini":       {Input: 0.15, Output: 0.6, CacheRead: 0.075},
	"gpt-4.1":           {Input: 2, Output: 8, CacheRead: 0.5},
	"gpt-4.1-mini":      {Input: 0.4, Output: 1.6, CacheRead: 0.1},
	"gpt-5":             {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5-mini":        {Input: 0.25, Output: 2, CacheRead: 0.025},
}

// Cost prices a usage for a model. ok is false, and the cost 0, when no
// family in the table matches the model.
func (t PriceTable) Cost(model string, u Usage) (usd float64, ok bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	const perToken = 1e-6
	usd = float64(u.InputTokens)*p.Input*perToken +
		float64(u.OutputTokens)*p.Output*perToken +
		float64(u.CacheCreationInputTokens)*p.CacheWrite*perToken +
		float64(u.CacheReadInputTokens)*p.CacheRead*perToken
	return usd, true
}

// Lookup returns the price of the longest family prefixing model.
func (t PriceTable) Lookup(model string) (Price, bool) {
	best, found := "", false
	for family := range t {
		if strings.HasPrefix(model, family) && len(family) >= len(best) {
			best, found = family, true
		}
	}
	return t[best], found
}

// LoadPrices reads a JSON object of family → price (fields input, output,
// cache_write, cache_read, USD per million tokens) and returns the default
// table with those entries added or replaced.
func LoadPrices(path string) (PriceTable, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	var override PriceTable
	if err := json.Unmarshal(data, &override); err != nil {
		return nil, fmt.Errorf("prices file %s: %w (want {\"model-family\": {\"input\": 3, \"output\": 15, \"cache_write\": 3.75, \"cache_read\": 0.3}})", path, err)
	}
	table := maps.Clone(DefaultPrices)
	maps.Copy(table, override)
	return table, nil
}
