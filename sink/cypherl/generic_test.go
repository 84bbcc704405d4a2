package cypherl

// generic converts parameter values to what crashtest.ParseWholeLiteral
// returns, so the two can be compared.
func generic(v any) any {
	switch v := v.(type) {
	case int:
		return int64(v)
	case float32:
		return float64(v)
	case []float64:
		out := make([]any, len(v))
		for i, f := range v {
			out[i] = f
		}
		return out
	case []float32:
		out := make([]any, len(v))
		for i, f := range v {
			out[i] = float64(f)
		}
		return out
	case []int64:
		out := make([]any, len(v))
		for i, n := range v {
			out[i] = n
		}
		return out
	case []string:
		out := make([]any, len(v))
		for i, s := range v {
			out[i] = s
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = generic(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = generic(e)
		}
		return out
	}
	return v
}
