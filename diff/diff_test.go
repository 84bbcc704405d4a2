package diff_test

import (
	"fmt"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/diff"
)

func TestEncodingBytes(t *testing.T) {
	t.Parallel()
	// Expected bytes written by hand from the encoding's definition: version
	// byte 1, then a type tag per value; strings are 's' + uvarint length +
	// bytes; ints are 'i' + zig-zag varint; maps are 'm' + uvarint count +
	// (key, value) pairs with keys sorted.
	for _, tc := range []struct {
		name string
		v    any
		want []byte
	}{
		{"nil", nil, []byte{1, 'z'}},
		{"true", true, []byte{1, 't'}},
		{"string", "ab", []byte{1, 's', 2, 'a', 'b'}},
		{"int", int64(-2), []byte{1, 'i', 3}},
		{"integral float is an int", 3.0, []byte{1, 'i', 6}},
		{"map sorted", map[string]any{"b": int64(1), "a": "x"}, []byte{1, 'm', 2, 's', 1, 'a', 's', 1, 'x', 's', 1, 'b', 'i', 2}},
		{"list", []any{"a", nil}, []byte{1, 'l', 2, 's', 1, 'a', 'z'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := diff.NewEncoder()
			require.NoError(t, e.Value(tc.v))
			require.Equal(t, tc.want, e.Bytes())
		})
	}
}

func TestHashIsStableAndDistinguishes(t *testing.T) {
	t.Parallel()
	a := map[string]any{"title": "Forwarded", "size": int64(35003), "tags": []any{"rfc", "http"}}
	b := map[string]any{"tags": []any{"rfc", "http"}, "size": 35003.0, "title": "Forwarded"}
	ha, err := diff.Hash(a)
	require.NoError(t, err)
	hb, err := diff.Hash(b)
	require.NoError(t, err)
	require.Equal(t, ha, hb, "key order and number type do not change the hash")

	// Ambiguities a naive encoding would hash alike.
	pairs := [][2]any{
		{[]any{"ab", "c"}, []any{"a", "bc"}},
		{"1", int64(1)},
		{nil, ""},
		{false, int64(0)},
		{map[string]any{"a": nil}, map[string]any{}},
		{1.5, 1.25},
	}
	for _, p := range pairs {
		h1, err := diff.Hash(p[0])
		require.NoError(t, err)
		h2, err := diff.Hash(p[1])
		require.NoError(t, err)
		require.NotEqual(t, h1, h2, "%#v vs %#v", p[0], p[1])
	}
}

// TestPinnedHashes fails when the canonical encoding changes by accident:
// such a change makes every stored record look changed and reprocesses
// everything. Change EncodingVersion and these values together, on purpose.
func TestPinnedHashes(t *testing.T) {
	t.Parallel()
	h, err := diff.Hash(map[string]any{"id": "d:x", "size": int64(300)})
	require.NoError(t, err)
	// Written by hand: version 1, map of 2, "id" → "d:x", "size" → 300
	// (zig-zag 600 = varint 0xd8 0x04).
	want := []byte{1, 'm', 2, 's', 2, 'i', 'd', 's', 3, 'd', ':', 'x', 's', 4, 's', 'i', 'z', 'e', 'i', 0xd8, 0x04}
	require.Equal(t, xxhash.Sum64(want), h)
	require.Equal(t, uint64(0x7e5521e54d230f23), mustHash(t, map[string]any{"id": "docs:rfc7239.txt", "size": int64(35003)}),
		"pinned: a change here reprocesses every record of every user")
	// TextHash is plain xxhash64: the empty string's value is xxhash's
	// published test vector.
	require.Equal(t, uint64(0xef46db3751d8e999), diff.TextHash(""))
}

func TestValueErrors(t *testing.T) {
	t.Parallel()
	_, err := diff.Hash(map[string]any{"x": struct{}{}})
	require.ErrorContains(t, err, `"x"`)
	_, err = diff.Hash(map[string]any{"nan": nan()})
	require.ErrorContains(t, err, "non-finite")
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		found        bool
		sh, sf, h, f uint64
		class        diff.Class
		reason       diff.Reason
	}{
		{false, 0, 0, 1, 1, diff.ClassNew, diff.ReasonNew},
		{true, 1, 1, 1, 1, diff.ClassUnchanged, diff.ReasonNone},
		{true, 1, 1, 2, 1, diff.ClassChanged, diff.ReasonContent},
		{true, 1, 1, 1, 2, diff.ClassChanged, diff.ReasonConfig},
		{true, 1, 1, 2, 2, diff.ClassChanged, diff.ReasonContent},
		{true, 0, 1, 2, 1, diff.ClassChanged, diff.ReasonInterrupted},
	} {
		c, r := diff.Classify(tc.found, tc.sh, tc.sf, tc.h, tc.f)
		require.Equal(t, tc.class, c)
		require.Equal(t, tc.reason, r)
	}
}

func ExampleHash() {
	row := map[string]any{"question": "What is COVID-19?", "views": int64(3)}
	h1, _ := diff.Hash(row)
	row["views"] = 3.0 // another source's number type
	h2, _ := diff.Hash(row)
	fmt.Println(h1 == h2)
	// Output: true
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

func mustHash(t *testing.T, v any) uint64 {
	t.Helper()
	h, err := diff.Hash(v)
	require.NoError(t, err)
	return h
}

func TestRecordHash(t *testing.T) {
	t.Parallel()
	base := diff.Record{Key: "hs:0101", Anchor: "hs", Attributes: map[string]any{"description": "Horses"},
		Links: []diff.Link{{Type: "PARENT", ToAnchor: "hs", ToKey: "hs:01"}, {Type: "GUIDE", ToAnchor: "guides", ToKey: "guides:1"}}}
	h := recordHashOf(t, base)
	swapped := base
	swapped.Links = []diff.Link{base.Links[1], base.Links[0]}
	require.Equal(t, h, recordHashOf(t, swapped), "the source's link order does not matter")
	for name, r := range map[string]diff.Record{
		"key":      {Key: "hs:0102", Anchor: base.Anchor, Attributes: base.Attributes, Links: base.Links},
		"link":     {Key: base.Key, Anchor: base.Anchor, Attributes: base.Attributes, Links: base.Links[:1]},
		"document": {Key: base.Key, Anchor: base.Anchor, Attributes: base.Attributes, Links: base.Links, Document: &diff.Document{Format: "txt"}},
	} {
		require.NotEqual(t, h, recordHashOf(t, r), name)
	}
}

func recordHashOf(t *testing.T, r diff.Record) uint64 {
	t.Helper()
	h, err := diff.RecordHash(r)
	require.NoError(t, err)
	return h
}

// TestRecordHashGolden pins RecordHash: a change of these values makes
// every stored record look changed once (bump EncodingVersion for that).
// The values were computed by the first implementation, which encoded the
// links as a []any of []any through Value and copied the document into the
// encoding; the allocation-free one must agree bit for bit.
func TestRecordHashGolden(t *testing.T) {
	t.Parallel()
	for i, tc := range []struct {
		r    diff.Record
		want uint64
	}{
		{diff.Record{Key: "hs:0101", Anchor: "hs", Attributes: map[string]any{"description": "Horses", "level": int64(4), "n": 2.5, "ok": true, "none": nil,
			"list": []any{"a", int64(1)}, "m": map[string]any{"z": "1", "a": []string{"x"}}},
			Links: []diff.Link{{Type: "PARENT", ToAnchor: "hs", ToKey: "hs:01"}, {Type: "GUIDE", ToAnchor: "guides", ToKey: "guides:1", Props: map[string]any{"w": int64(3)}}}},
			0x09bc55d3fbffde38},
		{diff.Record{Key: "doc.md", Anchor: "Document", Document: &diff.Document{Format: "md", Content: []byte("# Title\n\nText ü\n")}}, 0x90301792f213bf7a},
		{diff.Record{}, 0xc7c350d4eb7606fc},
		{diff.Record{Key: "k", Anchor: "a", Attributes: map[string]any{}, Links: []diff.Link{}}, 0x1231b789c154f391},
	} {
		require.Equal(t, tc.want, recordHashOf(t, tc.r), "record %d", i)
	}
}

func BenchmarkRecordHash(b *testing.B) {
	r := diff.Record{Key: "hs_code:0101~7", Anchor: "hs_code", Attributes: map[string]any{"description": "Horses, asses, mules and hinnies; live",
		"hscode": "0101~7", "level": int64(4), "parent": "01~7", "section": "I"},
		Links: []diff.Link{{Type: "PARENT", ToAnchor: "hs_code", ToKey: "hs_code:01~7"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := diff.RecordHash(r); err != nil {
			b.Fatal(err)
		}
	}
}
