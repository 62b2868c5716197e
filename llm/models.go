package llm

import "strings"

// ModelInfo is what the runtime knows of a model family: its list prices
// and the shortest prompt prefix the API caches (MinCacheTokens; a shorter
// prefix is silently not cached). MinCacheTokens is 0 where no source
// gave it.
type ModelInfo struct {
	Price
	MinCacheTokens int
}

// models is the one table of model facts: prices (DefaultPriceTable) and
// minimum cacheable lengths (MinCacheTokens), per model family (a
// model-name prefix; the longest prefix wins). Checked in November 2026
// against Anthropic's pricing page and model overviews (5-minute writes
// 1.25× input, 1-hour writes 2×, reads 0.1× but for the models noted) and
// its prompt-caching page. Where sources disagreed on a minimum the
// larger figure is kept, so that a prefix counted as cacheable is; a
// family without one has 0.
var models = map[string]ModelInfo{
	// Reads at 0.025× input.
	"claude-fable-5-1":  {Price: Price{Input: 10, Output: 50, CacheWrite: 12.5, CacheWrite1h: 20, CacheRead: 0.25}},
	"claude-mythos-5-1": {Price: Price{Input: 10, Output: 50, CacheWrite: 12.5, CacheWrite1h: 20, CacheRead: 0.25}},
	// Minimum: 512 in one source, 2,048 in another.
	"claude-fable-5":  {Price: Price{Input: 10, Output: 50, CacheWrite: 12.5, CacheWrite1h: 20, CacheRead: 1}, MinCacheTokens: 2048},
	"claude-mythos-5": {Price: Price{Input: 10, Output: 50, CacheWrite: 12.5, CacheWrite1h: 20, CacheRead: 1}, MinCacheTokens: 2048},
	// Reads at 0.05× input.
	"claude-opus-5-5": {Price: Price{Input: 4, Output: 20, CacheWrite: 5, CacheWrite1h: 8, CacheRead: 0.2}},
	"claude-opus-5":   {Price: Price{Input: 5, Output: 25, CacheWrite: 6.25, CacheWrite1h: 10, CacheRead: 0.5}, MinCacheTokens: 512},
	"claude-opus-4-8": {Price: Price{Input: 5, Output: 25, CacheWrite: 6.25, CacheWrite1h: 10, CacheRead: 0.5}, MinCacheTokens: 1024},
	// Minimum: 2,048 in one source, 4,096 in others.
	"claude-opus-4-7": {Price: Price{Input: 5, Output: 25, CacheWrite: 6.25, CacheWrite1h: 10, CacheRead: 0.5}, MinCacheTokens: 4096},
	"claude-opus-4-6": {Price: Price{Input: 5, Output: 25, CacheWrite: 6.25, CacheWrite1h: 10, CacheRead: 0.5}, MinCacheTokens: 4096},
	"claude-opus-4-5": {Price: Price{Input: 5, Output: 25, CacheWrite: 6.25, CacheWrite1h: 10, CacheRead: 0.5}, MinCacheTokens: 4096},
	"claude-opus-4":   {Price: Price{Input: 15, Output: 75, CacheWrite: 18.75, CacheWrite1h: 30, CacheRead: 1.5}, MinCacheTokens: 1024},
	// Reads cut from 0.1× to 0.05× input on 2026-10-07.
	"claude-sonnet-5-5": {Price: Price{Input: 2, Output: 10, CacheWrite: 2.5, CacheWrite1h: 4, CacheRead: 0.1}},
	"claude-sonnet-5":   {Price: Price{Input: 2, Output: 10, CacheWrite: 2.5, CacheWrite1h: 4, CacheRead: 0.2}, MinCacheTokens: 1024},
	// Minimum: 1,024 in the docs, 2,048 observed (issue 24 and others).
	"claude-sonnet-4-6": {Price: Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheWrite1h: 6, CacheRead: 0.3}, MinCacheTokens: 2048},
	// Sonnet 4 and 4.5 bill a prompt over 200k tokens (the 1M-context
	// beta) at the long-context rates.
	"claude-sonnet-4-5": {Price: sonnet4, MinCacheTokens: 1024},
	"claude-sonnet-4":   {Price: sonnet4, MinCacheTokens: 1024},
	"claude-3-7-sonnet": {Price: Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheWrite1h: 6, CacheRead: 0.3}, MinCacheTokens: 1024},
	"claude-3-5-sonnet": {Price: Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheWrite1h: 6, CacheRead: 0.3}, MinCacheTokens: 1024},
	// Two bands by prompt length, every token of the request at one.
	"claude-haiku-5-5": {Price: Price{Input: 0.1, Output: 0.5, CacheWrite: 0.125, CacheWrite1h: 0.2, CacheRead: 0.01,
		LongPromptOver: 100_000, LongPrompt: &Price{Input: 0.5, Output: 2.5, CacheWrite: 0.625, CacheWrite1h: 1, CacheRead: 0.05}}},
	"claude-haiku-4-5": {Price: Price{Input: 1, Output: 5, CacheWrite: 1.25, CacheWrite1h: 2, CacheRead: 0.1}, MinCacheTokens: 4096},
	"claude-3-5-haiku": {Price: Price{Input: 0.8, Output: 4, CacheWrite: 1, CacheWrite1h: 1.6, CacheRead: 0.08}, MinCacheTokens: 2048},
	"claude-3-haiku":   {Price: Price{Input: 0.25, Output: 1.25, CacheWrite: 0.3, CacheWrite1h: 0.5, CacheRead: 0.03}, MinCacheTokens: 2048},
	// OpenAI: no charge for cache writes on these models; the API caches
	// prompts of 1,024 tokens and more by itself.
	"gpt-4o":       {Price: Price{Input: 2.5, Output: 10, CacheRead: 1.25}, MinCacheTokens: 1024},
	"gpt-4o-mini":  {Price: Price{Input: 0.15, Output: 0.6, CacheRead: 0.075}, MinCacheTokens: 1024},
	"gpt-4.1":      {Price: Price{Input: 2, Output: 8, CacheRead: 0.5}, MinCacheTokens: 1024},
	"gpt-4.1-mini": {Price: Price{Input: 0.4, Output: 1.6, CacheRead: 0.1}, MinCacheTokens: 1024},
	"gpt-5":        {Price: Price{Input: 1.25, Output: 10, CacheRead: 0.125}, MinCacheTokens: 1024},
	"gpt-5-mini":   {Price: Price{Input: 0.25, Output: 2, CacheRead: 0.025}, MinCacheTokens: 1024},
}

var sonnet4 = Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheWrite1h: 6, CacheRead: 0.3,
	LongPromptOver: 200_000, LongPrompt: &Price{Input: 6, Output: 22.5, CacheWrite: 7.5, CacheWrite1h: 12, CacheRead: 0.6}}

// The default Anthropic models, by the work they do, the same in every
// kernel where nothing else is configured, and each in the price table
// (models): checked in November 2026 against Anthropic's models overview,
// where all three are current. Newer families (Opus 5, Sonnet 5) are
// priced above and can be chosen with --model or the config file.
const (
	DefaultDeepModel = "claude-opus-4-6"   // planning and deep thought: solve, hermitcrab's deep tier
	DefaultModel     = "claude-sonnet-4-6" // conversation and loops: lumen, hermitcrab's present tier
	DefaultFastModel = "claude-haiku-4-5"  // quick checks: ping, hermitcrab's light tier
)

// MinCacheTokens is the shortest prefix the API caches for model (its
// longest family in the table); ok is false when the table does not give
// one.
func MinCacheTokens(model string) (tokens int, ok bool) {
	best := ""
	for family := range models {
		if strings.HasPrefix(model, family) && len(family) > len(best) {
			best = family
		}
	}
	n := models[best].MinCacheTokens
	return n, n > 0
}
