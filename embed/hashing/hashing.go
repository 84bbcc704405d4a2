// Package hashing is a local, deterministic, offline embedder built on
// feature hashing. It is LEXICAL, not semantic: texts that share words,
// word pairs and spellings get similar vectors; texts that mean the same in
// other words do not. It needs no network and no model files, so it is the
// embedded default for a fresh machine and the embedder of tests.
//
// A vector is computed as follows (every step is part of the output format:
// changing any of them changes every vector, which invalidates every
// embedding cached under the same Model()):
//
//  1. The text is normalised to Unicode NFC and lower-cased.
//  2. Words are maximal runs of letters, digits and combining marks (any
//     script: Latin, Cyrillic, ...); everything else separates words.
//  3. Features are the words (namespace "w:"), each pair of neighbouring
//     words ("b:" + w1 + " " + w2) and the character trigrams of every word
//     padded as "^word$" ("c:" + three runes). Features are counted.
//  4. Each feature goes to bucket xxhash64(feature) mod dims with the sign
//     of the hash's top bit (+ when 0), weighted by
//     classWeight × (1 + ln(count)) — sublinear tf — where classWeight is
//     1 for words, 0.7 for pairs and 0.3 for trigrams.
//  5. The vector is scaled to unit L2 norm.
//
// A text without any word (empty, whitespace or punctuation only) gets the
// unit vector (1, 0, 0, …): never zeros, never NaN.
package hashing

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/text/unicode/norm"
)

// Defaults used by New for an empty model name or a non-positive dimension
// (the same defaults as config.Embedder for the hashing provider).
const (
	DefaultModel      = "hashing-v1"
	DefaultDimensions = 384
)

// Weights of the feature classes (step 4 of the package doc).
const (
	wordWeight    = 1.0
	bigramWeight  = 0.7
	trigramWeight = 0.3
)

// Embedder is the hashing embedder; it satisfies embed.Embedder and is safe
// for concurrent use (it holds no mutable state).
type Embedder struct {
	model string
	dims  int
}

// New returns a hashing embedder producing vectors of length dimensions.
// model names the variant in Model() (so a change of the algorithm can be
// given a new name, e.g. "hashing-v2"); "" means DefaultModel, and
// dimensions <= 0 means DefaultDimensions.
func New(model string, dimensions int) *Embedder {
	if model == "" {
		model = DefaultModel
	}
	if dimensions <= 0 {
		dimensions = DefaultDimensions
	}
	return &Embedder{model: model, dims: dimensions}
}

// Model returns "hashing/<model>/<dims>", e.g. "hashing/hashing-v1/384".
func (e *Embedder) Model() string { return fmt.Sprintf("hashing/%s/%d", e.model, e.dims) }

// Dimensions returns the vector length given to New.
func (e *Embedder) Dimensions() int { return e.dims }

// Embed returns one unit vector per text, in order. It fails only when ctx
// is done.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("hashing embed: %w", err)
			}
		}
		out[i] = e.Vector(t)
	}
	return out, nil
}

// Vector returns the unit vector of one text (see the package doc).
func (e *Embedder) Vector(text string) []float32 {
	ws := words(text)
	acc := make([]float64, e.dims)
	if len(ws) == 0 {
		v := make([]float32, e.dims)
		v[0] = 1
		return v
	}
	counts := make(map[string]int, 4*len(ws))
	var sb strings.Builder
	for i, w := range ws {
		counts["w:"+w]++
		if i > 0 {
			counts["b:"+ws[i-1]+" "+w]++
		}
		r := []rune("^" + w + "$")
		for j := 0; j+3 <= len(r); j++ {
			sb.Reset()
			sb.WriteString("c:")
			sb.WriteString(string(r[j : j+3]))
			counts[sb.String()]++
		}
	}
	// Sum in sorted feature order: float addition is not associative, and map
	// order is random, so this is what makes vectors bit-for-bit stable.
	features := make([]string, 0, len(counts))
	for f := range counts {
		features = append(features, f)
	}
	slices.Sort(features)
	for _, f := range features {
		n := counts[f]
		var class float64
		switch f[0] {
		case 'w':
			class = wordWeight
		case 'b':
			class = bigramWeight
		default:
			class = trigramWeight
		}
		h := xxhash.Sum64String(f)
		idx := h % uint64(e.dims)
		w := class * (1 + math.Log(float64(n)))
		if h>>63 == 1 {
			w = -w
		}
		acc[idx] += w
	}
	var sum float64
	for _, x := range acc {
		sum += x * x
	}
	v := make([]float32, e.dims)
	if sum == 0 { // every feature cancelled out: vanishingly rare, still defined
		v[0] = 1
		return v
	}
	norm := math.Sqrt(sum)
	for i, x := range acc {
		v[i] = float32(x / norm)
	}
	return v
}

// words splits text into the lower-cased NFC words the embedder hashes:
// maximal runs of letters, digits and combining marks.
func words(text string) []string {
	s := strings.ToLower(norm.NFC.String(text))
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
}
