package prompt

// TierParams is TierParamsWith with §6.3's models (what the tests read).
func TierParams(src Source, tier int) (Params, error) { return TierParamsWith(src, tier, "") }
