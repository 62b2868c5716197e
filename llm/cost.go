package llm

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Price is what a model family charges, in USD per million tokens.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheWrite float64 `json:"cache_write"` // a write to the 5-minute cache
	// CacheWrite1h is a write to the 1-hour cache (cache_control ttl
	// "1h"); 0 means 1.6 × CacheWrite, the API's 2× input against the
	// 5-minute 1.25×.
	CacheWrite1h float64 `json:"cache_write_1h,omitempty"`
	CacheRead    float64 `json:"cache_read"`
	// LongPrompt, when set, prices every token of a request whose prompt
	// (input, cache writes and cache reads) is over LongPromptOver tokens,
	// output included: the long-context rates of some models.
	LongPromptOver int    `json:"long_prompt_over,omitempty"`
	LongPrompt     *Price `json:"long_prompt,omitempty"`
}

// cacheWrite1h is the 1-hour write price, CacheWrite1h or its default.
func (p Price) cacheWrite1h() float64 {
	if p.CacheWrite1h > 0 {
		return p.CacheWrite1h
	}
	return p.CacheWrite * 2 / 1.25
}

// PriceTable maps a model family (a model-name prefix) to its price. The
// longest family that prefixes a model name prices it, so
// "claude-sonnet-4-5-20250929" is priced by "claude-sonnet-4-5".
type PriceTable map[string]Price

// DefaultPriceTable returns a copy of the built-in prices (list prices
// when the table was last checked, see models.go). They change: a prices
// file (LoadPrices) overrides them.
func DefaultPriceTable() PriceTable {
	t := make(PriceTable, len(models))
	for family, m := range models {
		t[family] = m.Price
	}
	return t
}

// Cost prices one request's usage for a model: a long prompt's rates
// depend on the request's prompt, so a sum of usages is priced call by
// call. ok is false, and the cost 0, when no family in the table matches
// the model. Cache writes are priced by their lifetime when the usage
// splits them (Usage.CacheCreation); writes it does not split are priced
// at the 5-minute rate.
func (t PriceTable) Cost(model string, u Usage) (usd float64, ok bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	if p.LongPrompt != nil && p.LongPromptOver > 0 && u.PromptTokens() > p.LongPromptOver {
		p = *p.LongPrompt
	}
	w1h := min(u.CacheCreation.Ephemeral1hInputTokens, u.CacheCreationInputTokens)
	const perToken = 1e-6
	usd = float64(u.InputTokens)*p.Input*perToken +
		float64(u.OutputTokens)*p.Output*perToken +
		float64(u.CacheCreationInputTokens-w1h)*p.CacheWrite*perToken +
		float64(w1h)*p.cacheWrite1h()*perToken +
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
// cache_write, cache_write_1h, cache_read, USD per million tokens, and
// optionally long_prompt_over with long_prompt) and returns the default
// table with those entries added or replaced. A family given replaces the
// built-in prices of the longer families it prefixes too, so that
// "claude-sonnet-4" prices claude-sonnet-4-5 as the file says.
func LoadPrices(path string) (PriceTable, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	var override PriceTable
	if err := json.Unmarshal(data, &override); err != nil {
		return nil, fmt.Errorf("prices file %s: %w (want {\"model-family\": {\"input\": 3, \"output\": 15, \"cache_write\": 3.75, \"cache_read\": 0.3}})", path, err)
	}
	for family, p := range override {
		if strings.TrimSpace(family) == "" {
			// Every model's name starts with "": it would replace the
			// whole table, and price even unknown models, unwarned.
			return nil, fmt.Errorf("prices file %s: a family with no name would price every model; name the family, e.g. \"claude-sonnet-4\"", path)
		}
		if !p.valid() {
			return nil, fmt.Errorf("prices file %s: %q: give prices from 0 to %d USD per million tokens, and long_prompt_over from 0 tokens", path, family, int(MaxPrice))
		}
	}
	return PricesWith(override), nil
}

// MaxPrice bounds a price a person gives, in USD per million tokens: far
// above any model's, and low enough that no request's cost overflows. A
// negative price would take from what a run has spent.
const MaxPrice = 1e6

func (p Price) valid() bool {
	for _, x := range []float64{p.Input, p.Output, p.CacheWrite, p.CacheWrite1h, p.CacheRead} {
		if !(x >= 0 && x <= MaxPrice) { // NaN is neither
			return false
		}
	}
	return p.LongPromptOver >= 0 && (p.LongPrompt == nil || p.LongPrompt.valid())
}

// PricesWith is the default table with override's families added or
// replaced, as LoadPrices reads them from a file.
func PricesWith(override PriceTable) PriceTable {
	table := DefaultPriceTable()
	maps.DeleteFunc(table, func(builtin string, _ Price) bool {
		for family := range override {
			if strings.HasPrefix(builtin, family) {
				return true
			}
		}
		return false
	})
	maps.Copy(table, override)
	return table
}

// ScriptedNote says what money metered on a scripted provider is: what
// the models named would charge for the same calls, nothing charged.
// Every kernel labels such money with it (Client.CostNote), so the rule
// reads the same everywhere.
func ScriptedNote(models ...string) string {
	var names []string
	for _, m := range models {
		if m != "" && !slices.Contains(names, m) {
			names = append(names, m)
		}
	}
	what := "the kernel's models"
	switch n := len(names); {
	case n == 1:
		what = names[0]
	case n > 1:
		what = strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	return "scripted: what " + what + " would charge; nothing is charged"
}

// CostLine is the cost line every kernel prints: "cost $0.0123, 84% of
// input from cache", the share left out when the usage has no input.
func CostLine(usd float64, u Usage) string {
	line := fmt.Sprintf("cost $%.4f", usd)
	if u.PromptTokens() > 0 {
		// Rounded down: a prompt that is not read whole from the cache
		// never shows as 100%.
		line += fmt.Sprintf(", %d%% of input from cache", int(u.CacheReadShare()*100))
	}
	return line
}
