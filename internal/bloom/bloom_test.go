package bloom

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoFalseNegativesAndTheRate: every key added is found, across the
// filter's growth, for both sizings in use; the others come out positive
// at about the rate the sizing gives, and the bits stay near BitsPerKey a
// key.
func TestNoFalseNegativesAndTheRate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p      Params
		maxFP  int // of 100,000 keys not added
		growth int // parts for 300,000 keys: 64k+128k+256k, or 16k+…+256k
	}{
		{Params{}, 5_000, 3},             // 10 bits: 1 % a part
		{Params{32, 22, 1 << 14}, 10, 5}, // 32 bits: 2 × 10⁻⁷ a part
		{Params{BitsPerKey: 16, Hashes: 11}, 100, 3},
	} {
		t.Run(fmt.Sprint(c.p), func(t *testing.T) {
			var f Filter
			f.Params = c.p
			const n = 300_000
			for i := range n {
				f.Add(fmt.Sprintf("in:%d", i))
			}
			for i := range n {
				require.True(t, f.MayContain(fmt.Sprintf("in:%d", i)), "key %d", i)
			}
			fp := 0
			for i := range 100_000 {
				if f.MayContain(fmt.Sprintf("out:%d", i)) {
					fp++
				}
			}
			require.LessOrEqual(t, fp, c.maxFP, "false positives among 100,000 (%d parts)", f.Parts())
			require.Equal(t, c.growth, f.Parts())
			bpk := f.params().BitsPerKey
			first := f.params().FirstCap
			require.LessOrEqual(t, f.Bytes(), 2*n*bpk/8+first*bpk/8+64*f.Parts(), "bits a key stay near BitsPerKey")
		})
	}
	var empty Filter
	require.False(t, empty.MayContain("x"))
	require.Zero(t, empty.Bytes())
}
