package llm

import "testing"

// The default models every kernel falls back on are priced: a default the
// table does not know would be metered at $0, and no budget could hold it.
func TestTheDefaultModelsArePriced(t *testing.T) {
	for _, m := range []string{DefaultDeepModel, DefaultModel, DefaultFastModel} {
		if _, ok := DefaultPriceTable().Lookup(m); !ok {
			t.Errorf("default model %s has no price", m)
		}
		if _, ok := MinCacheTokens(m); !ok {
			t.Errorf("default model %s has no cache minimum", m)
		}
	}
}
