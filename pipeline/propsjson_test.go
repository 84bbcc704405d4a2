package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// jsonStrings are strings encoding/json escapes in every way it does.
var jsonStrings = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "tab\tnl\ncr\rbs\bff\f", "nul\x00 esc\x1b del\x7f us\x1f",
	"ls \u2028 ps \u2029", "bad \xff utf-8 \xc3", "Лошади, ослы, мулы", "Größe 名前 🚀", "hs_code:0101~3", "'single'",
}

// jsonFloats are floats around encoding/json's format cutoffs.
var jsonFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, float64(float32(0.1)), 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, -1e21,
	1.5e300, 5e-324, math.MaxFloat64, 123456789.125, 1e-9, 2.5e-10}

// TestMarshalRowProps: a row's props are written as encoding/json writes
// them, and props it does not write go through encoding/json.
func TestMarshalRowProps(t *testing.T) {
	t.Parallel()
	node := map[string]any{"_key": "hs_code:01", "level": int64(2), "n": 7, "ok": true, "no": false, "none": nil,
		"list": []any{"a", int64(1), nil, []any{}, map[string]any{"k": "v"}}, "tags": []string{"x", "<y>"}, "empty": []string{},
		"nil list": []string(nil), "nil any": []any(nil), "nested": map[string]any{"b": 1.5, "a": map[string]any{}}, "nil map": map[string]any(nil)}
	for i, s := range jsonStrings {
		node["s"+strings.Repeat("_", i)] = s
		node[s] = i
	}
	for i, f := range jsonFloats {
		node["f"+strings.Repeat("_", i)] = f
	}
	cases := []recordProps{
		{},
		{ID: "hs_code:01", Node: map[string]any{}},
		{ID: "hs_code:01", Node: node, Vectors: []string{"description"}, Links: []linkRef{
			{Type: "PARENT", ToAnchor: "cn_code", ToID: "hs_code:TOTAL"},
			{Type: "REL", ToAnchor: "a&b", ToID: "\u2028", Props: map[string]any{"w": 0.5, "s": "<"}},
			{Type: "EMPTY", Props: map[string]any{}},
		}},
		{Node: node, Links: []linkRef{}, Vectors: []string{}},
		// Not a row's shape, or values it does not write: encoding/json.
		{ID: "d", Node: node, DocIDs: []string{"rfc7231"}},
		{ID: "d", Node: map[string]any{"f32": float32(0.1)}},
		{ID: "d", Node: map[string]any{"num": json.Number("12")}},
		{ID: "d", Node: map[string]any{"i32": int32(3), "u": uint8(4)}},
		{ID: "e", Edge: &edgeRef{Type: "T"}},
		{Mandatory: &MandatoryLink{From: "a"}},
		// encoding/json refuses NaN and ±Inf: nil, as json.Marshal's error
		// left it.
		{ID: "d", Node: map[string]any{"f": math.NaN()}},
		{ID: "d", Node: map[string]any{"l": []any{math.Inf(1)}}},
		{ID: "d", Node: map[string]any{}, Links: []linkRef{{Type: "T", Props: map[string]any{"f": math.Inf(-1)}}}},
	}
	for i, rp := range cases {
		want, err := json.Marshal(rp)
		if err != nil {
			want = nil
		}
		require.Equal(t, string(want), string(marshalRowProps(rp)), "case %d", i)
		if err != nil {
			require.Nil(t, marshalRowProps(rp), "case %d", i)
		}
	}
}

func FuzzMarshalRowProps(f *testing.F) {
	for i, s := range jsonStrings {
		f.Add(s, jsonFloats[i%len(jsonFloats)])
	}
	f.Fuzz(func(t *testing.T, s string, x float64) {
		rp := recordProps{ID: s, Node: map[string]any{s: x, "k": s, "l": []any{s, x}}, Vectors: []string{s},
			Links: []linkRef{{Type: s, ToAnchor: s, ToID: s, Props: map[string]any{s: s}}}}
		want, err := json.Marshal(rp)
		if err != nil {
			want = nil
		}
		if got := marshalRowProps(rp); string(got) != string(want) {
			t.Fatalf("%q, %v: got %s, want %s", s, x, got, want)
		}
	})
}

// TestHashHexAndSyncedAt: hashHex is %016x; syncedClock writes a time in
// RFC 3339 UTC, also when the clock moves within a second and on.
func TestHashHexAndSyncedAt(t *testing.T) {
	t.Parallel()
	for _, h := range []uint64{0, 1, 0xabc, 0x948df0ae57da8109, math.MaxUint64, 1 << 63} {
		require.Equal(t, fmt.Sprintf("%016x", h), hashHex(h))
	}
	now := time.Date(2026, 12, 1, 15, 53, 18, 900_000_000, time.FixedZone("CET", 3600))
	var c syncedClock
	for _, step := range []time.Duration{0, 50 * time.Millisecond, 60 * time.Millisecond, time.Second, time.Hour, -time.Hour} {
		now = now.Add(step)
		require.Equal(t, now.UTC().Format("2006-01-02T15:04:05Z07:00"), c.at(now), "%v", now)
	}
	require.Equal(t, "1970-01-01T00:00:00Z", (&syncedClock{}).at(time.Unix(0, 0)), "the zero second is formatted too")
}
