package grist

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBloom: every key added is reported (no false negatives), across the
// parts the filter grows by; keys never added are almost never reported,
// and the filter stays about dupFilter's bits a key.
func TestBloom(t *testing.T) {
	t.Parallel()
	b := newDupCheck().listed
	const n = 300_000
	fp := 0
	for i := range n {
		k := "HSCodes:" + strconv.Itoa(i)
		if b.MayContain(k) {
			fp++ // not added yet: a false positive
		}
		b.Add(k)
	}
	for i := range n {
		require.True(t, b.MayContain("HSCodes:"+strconv.Itoa(i)), "key %d", i)
	}
	require.Greater(t, b.Parts(), 1, "the filter grew")
	require.LessOrEqual(t, fp, 3, "false positives among %d new keys", n)
	require.LessOrEqual(t, b.Bytes(), 2*n*dupFilter.BitsPerKey/8+dupFilter.FirstCap*dupFilter.BitsPerKey/8)
}
