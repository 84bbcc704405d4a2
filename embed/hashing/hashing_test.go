package hashing

import (
	"context"
	"encoding/binary"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/cespare/xxhash/v2"
	"github.com/kgsync/kgsync/internal/corpus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/text/unicode/norm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func l2(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestModelAndDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, "hashing/hashing-v1/384", New("", 0).Model())
	require.Equal(t, 384, New("", -1).Dimensions())
	e := New("hashing-v2", 64)
	require.Equal(t, "hashing/hashing-v2/64", e.Model())
	require.Equal(t, 64, e.Dimensions())
}

func TestDeterministicUnitVectors(t *testing.T) {
	t.Parallel()
	texts := []string{
		"The server MUST send a Content-Length header field.",
		"Каждый имеет право на свободу и личную неприкосновенность.",
		"a",
		"x x x x x x x x", // repeated feature: sublinear tf, still unit
	}
	e := New("", 384)
	first, err := e.Embed(t.Context(), texts)
	require.NoError(t, err)
	require.Len(t, first, len(texts))
	// A second embedder and a second call give bit-identical vectors.
	second, err := New("", 384).Embed(t.Context(), texts)
	require.NoError(t, err)
	require.Equal(t, first, second)
	for i, v := range first {
		require.Len(t, v, 384)
		require.InDelta(t, 1.0, l2(v), 1e-6, "text %d", i)
		for _, x := range v {
			require.False(t, math.IsNaN(float64(x)))
		}
	}
}

func TestNoWordsGivesFixedUnitVector(t *testing.T) {
	t.Parallel()
	e := New("", 16)
	want := make([]float32, 16)
	want[0] = 1
	for _, text := range []string{"", "   \n\t", "--- ... !!!"} {
		require.Equal(t, want, e.Vector(text), "%q", text)
	}
}

// TestSingleWordDerivation recomputes the vector of "go" by hand from the
// rules in the package doc, independently of the implementation's loops:
// features "w:go" (weight 1), "c:^go" and "c:go$" (weight 0.3 each).
func TestSingleWordDerivation(t *testing.T) {
	t.Parallel()
	const dims = 1024
	want := make([]float64, dims)
	for f, w := range map[string]float64{"w:go": 1, "c:^go": 0.3, "c:go$": 0.3} {
		h := xxhash.Sum64String(f)
		if h>>63 == 1 {
			w = -w
		}
		want[h%dims] += w
	}
	var n float64
	for _, x := range want {
		n += x * x
	}
	n = math.Sqrt(n)
	got := New("", dims).Vector("Go")
	for i := range want {
		require.InDelta(t, want[i]/n, float64(got[i]), 1e-7, "component %d", i)
	}
}

// TestGolden pins the first components of a fixed text. If this fails, the
// algorithm changed: every vector cached under the same Model() is now
// wrong. Either restore the algorithm or give it a new model name
// ("hashing-v2") so caches and fingerprints change with it; only then update
// these numbers.
func TestGolden(t *testing.T) {
	t.Parallel()
	got := New("hashing-v1", 384).Vector("The quick brown fox jumps over the lazy dog. Съешь же ещё этих мягких французских булок.")
	want := []float32{0, 0, 0.051956028, 0, 0.12123074, 0, 0, 0, 0, 0, 0, 0.17318676, 0, 0, 0, 0}
	require.Equal(t, want, got[:len(want)])
	// And all 384 components, bit for bit, as xxhash64 of their
	// little-endian float32 bits.
	b := make([]byte, 0, 4*len(got))
	for _, x := range got {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	require.Equal(t, uint64(0x8a951b63ce9f45bf), xxhash.Sum64(b))
}

func TestLexicalSimilarity(t *testing.T) {
	t.Parallel()
	e := New("", 384)
	tests := []struct {
		name, a, near, far string
	}{
		{
			name: "english",
			a:    "The origin server returns 404 Not Found when the target resource is missing.",
			near: "An origin server returned 404 (Not Found) because the target resource was missing.",
			far:  "Chunked transfer coding wraps the payload body in a series of chunks.",
		},
		{
			name: "cyrillic",
			a:    "Президент Российской Федерации является главой государства.",
			near: "Глава государства — Президент Российской Федерации.",
			far:  "Каждый имеет право на свободу и личную неприкосновенность.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vs, err := e.Embed(t.Context(), []string{tt.a, tt.near, tt.far})
			require.NoError(t, err)
			near, far := cosine(vs[0], vs[1]), cosine(vs[0], vs[2])
			require.Greater(t, near, far+0.3, "near %.3f far %.3f", near, far)
		})
	}
}

func TestUnicode(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"привет", "мир", "ёлка", "x2"}, wordsOf("ПРИВЕТ, мир! Ёлка… x2"))
	e := New("", 128)
	// Case and Unicode normalisation do not matter: "ё" composed (U+0451)
	// and decomposed (е + U+0308) give the same vector.
	require.Equal(t, e.Vector("Ёлка"), e.Vector("е\u0308лка"))
	require.Equal(t, e.Vector("ЗАКОН"), e.Vector("закон"))
	// A Cyrillic text is not the fixed no-word vector.
	v := e.Vector("закон")
	require.NotEqual(t, float32(1), v[0])
	require.InDelta(t, 1.0, l2(v), 1e-6)
}

func TestEmbedHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := New("", 8).Embed(ctx, []string{"a"})
	require.ErrorIs(t, err, context.Canceled)
}

// referenceWords is steps 1 and 2 of the package doc as written: NFC,
// lower case, split at every rune that is not a letter, digit or mark.
func referenceWords(text string) []string {
	s := strings.ToLower(norm.NFC.String(text))
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
}

// wordsOf returns the words Vector hashes for text, as strings.
func wordsOf(text string) []string {
	var sc scratch
	low, ws := sc.words(text)
	out := []string{}
	for _, w := range ws {
		out = append(out, string(low[w.start:w.end]))
	}
	return out
}

// referenceVector is the package doc's algorithm written out step by step,
// with a map of feature strings: the fast Vector must give the same bits.
func referenceVector(dims int, text string) []float32 {
	ws := referenceWords(text)
	v := make([]float32, dims)
	if len(ws) == 0 {
		v[0] = 1
		return v
	}
	counts := map[string]int{}
	for i, w := range ws {
		counts["w:"+w]++
		if i > 0 {
			counts["b:"+ws[i-1]+" "+w]++
		}
		r := []rune("^" + w + "$")
		for j := 0; j+3 <= len(r); j++ {
			counts["c:"+string(r[j:j+3])]++
		}
	}
	acc := make([]float64, dims)
	for _, f := range slices.Sorted(maps.Keys(counts)) {
		class := map[byte]float64{'w': wordWeight, 'b': bigramWeight, 'c': trigramWeight}[f[0]]
		h := xxhash.Sum64String(f)
		w := class * (1 + math.Log(float64(counts[f])))
		if h>>63 == 1 {
			w = -w
		}
		acc[h%uint64(dims)] += w
	}
	var sum float64
	for _, x := range acc {
		sum += x * x
	}
	if sum == 0 {
		v[0] = 1
		return v
	}
	for i, x := range acc {
		v[i] = float32(x / math.Sqrt(sum))
	}
	return v
}

// corpusTexts are the lines of the corpus's tables and text documents
// (Latin, Cyrillic, digits, punctuation, repeated words), and a few edge
// cases.
func corpusTexts(t testing.TB) []string {
	texts := []string{"a", "ab", "A a a", "ё", "е\u0308", "x\xffy", "日本語のテキスト", "a-b a-b a-b", "\u00e9\u00e9 e\u0301"}
	for _, rel := range []string{"tables/harmonized-system.csv", "docs/constitutionrf.txt", "docs/rfc7239.txt"} {
		b, err := os.ReadFile(filepath.Join(corpus.Dir(t), rel))
		require.NoError(t, err)
		texts = append(texts, strings.Split(string(b), "\n")...)
	}
	return texts
}

// edgeTexts are texts whose words take the less common paths: empty and
// punctuation only, ASCII upper case, repeated words, non-ASCII case
// mappings that change the length, combining marks that NFC composes (or
// leaves), letters NFC replaces (Kelvin and Ohm signs), non-Latin digits,
// invalid UTF-8, and a text long enough that its buffers are not kept.
var edgeTexts = []string{
	"", " ", "\t\n", "--- ... !!!", "«»—…", "\x00\x01\x7f",
	"HELLO World", "ABC-def_GHI", "MiXeD cAsE 42", "x2 X2 x2",
	"the the the the", "a a", "Go go GO", "a-b-a-b-a-b",
	"Straße STRASSE", "İstanbul", "ǅemal ǄEMAL", "ΣΊΣΥΦΟΣ", "ﬁle",
	"\u0301abc", "a\u0301\u0302b", "e\u0301 é", "\u1100\u1161 가",
	"\u212a \u2126 k ω", "١٢٣ ٣x", "日本 語", "한국어 텍스트",
	"\xff", "a\xc3", "\xc3\xa9\xff\xc3", "ok\xe2\x82",
	strings.Repeat("word WORD слово ", 6000),
}

// TestWordsMatchReference: the ASCII fast path and the general path of
// words split exactly as steps 1 and 2 of the package doc.
func TestWordsMatchReference(t *testing.T) {
	t.Parallel()
	for _, text := range append(corpusTexts(t), edgeTexts...) {
		want := referenceWords(text)
		if want == nil {
			want = []string{}
		}
		if got := wordsOf(text); !slices.Equal(want, got) {
			t.Fatalf("text %q: words %q, reference %q", text, got, want)
		}
	}
}

// TestVectorConcurrent: calls in parallel (sharing the scratch pool) give
// the reference's vectors, texts of all lengths interleaved.
func TestVectorConcurrent(t *testing.T) {
	t.Parallel()
	texts := corpusTexts(t)[:2000]
	texts = append(texts, edgeTexts...)
	e := New("", 32)
	want := make([][]float32, len(texts))
	for i, text := range texts {
		want[i] = referenceVector(32, text)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Go(func() {
			for k := range texts {
				i := (k*7 + g*len(texts)/4) % len(texts)
				if !slices.Equal(want[i], e.Vector(texts[i])) {
					errs <- texts[i]
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for text := range errs {
		t.Errorf("text %q: concurrent vector differs from the reference", text)
	}
}

func TestVectorMatchesReference(t *testing.T) {
	t.Parallel()
	texts := append(corpusTexts(t), edgeTexts...)
	require.Greater(t, len(texts), 5000)
	for _, dims := range []int{7, 32, 384} {
		e := New("", dims)
		for _, text := range texts {
			if want, got := referenceVector(dims, text), e.Vector(text); !slices.Equal(want, got) {
				t.Fatalf("dims %d, text %q: vector differs from the reference", dims, text)
			}
		}
	}
}

func BenchmarkVector(b *testing.B) {
	texts := corpusTexts(b)[:5000]
	e := New("", 32)
	b.ReportAllocs()
	for b.Loop() {
		for _, text := range texts {
			e.Vector(text)
		}
	}
}

// ModelStems: inflected forms meet (their word and pair features; the
// trigrams still differ), stop words weigh nothing; hashing-v1 keeps its
// vectors.
func TestStemsVariant(t *testing.T) {
	t.Parallel()
	v2, v1 := New(ModelStems, 384), New("", 384)
	for _, pair := range [][2]string{
		{"uploads rejected", "upload rejecting"},
		{"Президента избирают", "президент избирается"},
	} {
		stems, plain := cosine(v2.Vector(pair[0]), v2.Vector(pair[1])), cosine(v1.Vector(pair[0]), v1.Vector(pair[1]))
		require.Greater(t, stems, plain+0.2, "%q ~ %q: %s %.3f, hashing-v1 %.3f", pair[0], pair[1], ModelStems, stems, plain)
	}
	q, p := "What is the rejected upload?", "rejected upload"
	require.InDelta(t, 1, cosine(v2.Vector(q), v2.Vector(p)), 1e-6)
	require.Less(t, cosine(v1.Vector(q), v1.Vector(p)), 0.9)
	// A text of stop words only is a text without words.
	require.Equal(t, v2.Vector(""), v2.Vector("what is the"))
	require.NotEqual(t, v1.Vector(""), v1.Vector("what is the"))
}
