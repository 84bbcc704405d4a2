package grist

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBloom: every key added is reported (no false negatives), across the
// parts the filter grows by; keys never added are almost never reported,
// and the filter stays about bloomBitsKey bits a key.
func TestBloom(t *testing.T) {
	t.Parallel()
	var b bloom
	const n = 300_000
	fp := 0
	for i := range n {
		k := "HSCodes:" + strconv.Itoa(i)
		if b.mayContain(k) {
			fp++ // not added yet: a false positive
		}
		b.add(k)
	}
	for i := range n {
		require.True(t, b.mayContain("HSCodes:"+strconv.Itoa(i)), "key %d", i)
	}
	require.Greater(t, len(b.parts), 1, "the filter grew")
	require.LessOrEqual(t, fp, 3, "false positives among %d new keys", n)
	bytes := 0
	for _, p := range b.parts {
		bytes += 8 * len(p.bits)
	}
	require.LessOrEqual(t, bytes, 2*n*bloomBitsKey/8+bloomFirstCap*bloomBitsKey/8)
}
