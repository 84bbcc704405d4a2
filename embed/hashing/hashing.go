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
// The variant ModelStems ("hashing-v2", opt-in: embedder.model) drops the
// English and Russian stop words and takes the Snowball stem of every other
// word for its word and pair features (trigrams stay those of the word), so
// inflected forms meet and a question's "what", "how", "the" weigh
// nothing. Its vectors differ from hashing-v1's, and its Model() does too.
//
// A text without any word (empty, whitespace or punctuation only; for
// ModelStems also stop words only) gets the unit vector (1, 0, 0, …):
// never zeros, never NaN.
package hashing

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/kljensen/snowball/english"
	"github.com/kljensen/snowball/russian"
	"golang.org/x/text/unicode/norm"
)

// Defaults used by New for an empty model name or a non-positive dimension
// (the same defaults as config.Embedder for the hashing provider).
const (
	// ModelStems is the variant whose word and pair features are Snowball
	// stems (English for Latin words, Russian for Cyrillic ones) and which
	// drops those languages' stop words, so "uploads" meets "upload" and a
	// question's "what", "how", "the" weigh nothing; trigrams are still
	// those of the words.
	ModelStems        = "hashing-v2"
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
	// stems: the ModelStems variant (stop words dropped, words and pairs
	// as stems).
	stems bool
}

// New returns a hashing embedder producing vectors of length dimensions.
// model names the variant in Model(): ModelStems selects the stemmed
// variant, "" means DefaultModel, and any other name computes
// DefaultModel's vectors under that name. dimensions <= 0 means
// DefaultDimensions.
func New(model string, dimensions int) *Embedder {
	if model == "" {
		model = DefaultModel
	}
	if dimensions <= 0 {
		dimensions = DefaultDimensions
	}
	return &Embedder{model: model, dims: dimensions, stems: model == ModelStems}
}

// Model returns "hashing/<model>/<dims>", e.g. "hashing/hashing-v1/384".
func (e *Embedder) Model() string { return fmt.Sprintf("hashing/%s/%d", e.model, e.dims) }

// Local reports true: the vectors are computed in this process
// (embed.Local).
func (e *Embedder) Local() bool { return true }

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
//
// The features are written one after another into one byte buffer,
// hashed once each, grouped by bucket and sorted within it, so equal
// features end up side by side and are counted without a map or a string
// per feature; each bucket's sum is the one the package doc defines, bit
// for bit. The working buffers come from a pool shared by all embedders,
// so a call allocates only its result (and, for a text that is not
// ASCII, its normalised lower-case copy).
func (e *Embedder) Vector(text string) []float32 {
	v := make([]float32, e.dims)
	sc := scratchPool.Get().(*scratch)
	defer sc.release()
	low, ws := sc.words(text)
	if len(ws) == 0 {
		v[0] = 1
		return v
	}
	fs := &sc.fs
	// Bytes of a word's features: "w:"+w, "b:"+prev+" "+w, and about
	// len(w) trigrams of "c:" and three runes each.
	n := 0
	for _, w := range ws {
		n += 8*int(w.end-w.start) + 8
	}
	fs.buf = slices.Grow(fs.buf[:0], n)
	fs.spans = slices.Grow(fs.spans[:0], 8*len(ws))
	bounds := sc.bounds[:0]
	var prev []byte
	for i, ww := range ws {
		w := low[ww.start:ww.end]
		if e.stems {
			st, keep := stemOf(w)
			if !keep {
				continue
			}
			fs.add("w:", nil, "", st)
			if prev != nil {
				fs.add("b:", prev, " ", st)
			}
			prev = st
		} else {
			fs.add("w:", nil, "", w)
			if i > 0 {
				fs.add("b:", low[ws[i-1].start:ws[i-1].end], " ", w)
			}
		}
		// The trigrams of "^w$": three runes each, taken as the bytes
		// between rune boundaries (words are valid UTF-8: see words).
		bounds = bounds[:0]
		bounds = append(bounds, 0) // "^"
		for j := 0; j < len(w); {
			bounds = append(bounds, 1+j)
			if w[j] < utf8.RuneSelf {
				j++
			} else {
				_, size := utf8.DecodeRune(w[j:])
				j += size
			}
		}
		bounds = append(bounds, 1+len(w), 2+len(w)) // "$", end
		padded := len(bounds) - 1                   // runes in "^w$"
		for j := 0; j+3 <= padded; j++ {
			fs.trigram(w, bounds[j], bounds[j+3])
		}
	}
	sc.bounds = bounds
	acc := slices.Grow(sc.acc[:0], e.dims)[:e.dims]
	clear(acc)
	sc.acc = acc
	sc.each(uint64(e.dims), func(f []byte, h uint64, count int) {
		var class float64
		switch f[0] {
		case 'w':
			class = wordWeight
		case 'b':
			class = bigramWeight
		default:
			class = trigramWeight
		}
		w := class // × (1 + ln 1), exactly
		if count > 1 {
			w = class * (1 + math.Log(float64(count)))
		}
		if h>>63 == 1 {
			w = -w
		}
		acc[h%uint64(e.dims)] += w
	})
	var sum float64
	for _, x := range acc {
		sum += x * x
	}
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

// scratch holds the working buffers of one Vector call; they are reused
// through scratchPool, one scratch per call in progress.
type scratch struct {
	low      []byte  // the lower-cased NFC text
	ws       []wspan // its words, as spans of low
	bounds   []int   // rune boundaries of one padded word
	fs       featureSet
	ends     []int32 // bucket ends of the counting sort
	next     []int32 // next free slot per bucket
	byBucket []span  // fs.spans grouped by bucket
	acc      []float64
}

// scratchPool holds idle scratches; Get gives a goroutine its own.
var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxKeptBytes caps the feature buffer a scratch keeps for reuse, so one
// very long text does not pin its buffers for the life of the process.
const maxKeptBytes = 64 << 10

// release returns sc to the pool (dropping buffers grown past
// maxKeptBytes).
func (sc *scratch) release() {
	if cap(sc.fs.buf) > maxKeptBytes || cap(sc.low) > maxKeptBytes {
		*sc = scratch{}
	}
	scratchPool.Put(sc)
}

// wspan is one word of scratch.low, low[start:end].
type wspan struct{ start, end int32 }

// span is one feature's bytes in featureSet.buf, buf[start:end], and
// their xxhash64.
type span struct {
	h          uint64
	start, end int32
}

// featureSet holds a text's features, with repeats, as spans of one buffer.
type featureSet struct {
	buf   []byte
	spans []span
}

// push ends the feature that began at start.
func (fs *featureSet) push(start int) {
	f := fs.buf[start:]
	fs.spans = append(fs.spans, span{xxhash.Sum64(f), int32(start), int32(len(fs.buf))})
}

// add appends the feature prefix+a+sep+b.
func (fs *featureSet) add(prefix string, a []byte, sep string, b []byte) {
	start := len(fs.buf)
	fs.buf = append(fs.buf, prefix...)
	fs.buf = append(fs.buf, a...)
	fs.buf = append(fs.buf, sep...)
	fs.buf = append(fs.buf, b...)
	fs.push(start)
}

// trigram appends "c:" + ("^"+w+"$")[from:to].
func (fs *featureSet) trigram(w []byte, from, to int) {
	start := len(fs.buf)
	fs.buf = append(fs.buf, 'c', ':')
	if from == 0 {
		fs.buf = append(fs.buf, '^')
		from = 1
	}
	end := to == len(w)+2
	if end {
		to--
	}
	fs.buf = append(fs.buf, w[from-1:to-1]...)
	if end {
		fs.buf = append(fs.buf, '$')
	}
	fs.push(start)
}

// each calls f once per distinct feature of sc.fs with its hash and the
// number of times it occurs, bucket (hash mod dims) by bucket, and within
// a bucket in byte order (the order of Go strings). Features of different
// buckets add to different sums, so this gives every bucket the sum, in
// the order, of a walk over all features sorted by their bytes; only
// features of the same bucket are compared.
func (sc *scratch) each(dims uint64, f func(feature []byte, h uint64, count int)) {
	fs := &sc.fs
	bytesOf := func(s span) []byte { return fs.buf[s.start:s.end] }
	// A counting sort by bucket: ends[b] is where bucket b's spans end.
	ends := slices.Grow(sc.ends[:0], int(dims)+1)[:dims+1]
	clear(ends)
	for _, s := range fs.spans {
		ends[s.h%dims+1]++
	}
	for b := 1; b < len(ends); b++ {
		ends[b] += ends[b-1]
	}
	byBucket := slices.Grow(sc.byBucket[:0], len(fs.spans))[:len(fs.spans)]
	next := append(sc.next[:0], ends[:dims]...)
	sc.ends, sc.byBucket, sc.next = ends, byBucket, next
	for _, s := range fs.spans {
		b := s.h % dims
		byBucket[next[b]] = s
		next[b]++
	}
	for b := range dims {
		group := byBucket[ends[b]:ends[b+1]]
		if len(group) > 1 {
			slices.SortFunc(group, func(x, y span) int { return bytes.Compare(bytesOf(x), bytesOf(y)) })
		}
		for i := 0; i < len(group); {
			cur := group[i]
			j := i + 1
			for j < len(group) && group[j].h == cur.h && bytes.Equal(bytesOf(group[j]), bytesOf(cur)) {
				j++
			}
			f(bytesOf(cur), cur.h, j-i)
			i = j
		}
	}
}

// words splits text into the lower-cased NFC words the embedder hashes:
// maximal runs of letters, digits and combining marks. It returns the
// lower-cased NFC text and the words as spans of it, both in sc's buffers.
//
// An ASCII text is its own NFC form and lower-cases byte by byte (A–Z to
// a–z, as strings.ToLower does); its words are the runs of ASCII letters
// and digits (the only ASCII runes unicode.IsLetter or unicode.IsDigit
// accept; no ASCII rune is a mark). Any other text goes through
// norm.NFC and strings.ToLower.
func (sc *scratch) words(text string) ([]byte, []wspan) {
	low := sc.low[:0]
	ascii := true
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	ws := sc.ws[:0]
	if ascii {
		low = slices.Grow(low, len(text))
		start := -1
		for i := 0; i < len(text); i++ {
			c := text[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			low = append(low, c)
			word := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
			switch {
			case word && start < 0:
				start = i
			case !word && start >= 0:
				ws = append(ws, wspan{int32(start), int32(i)})
				start = -1
			}
		}
		if start >= 0 {
			ws = append(ws, wspan{int32(start), int32(len(low))})
		}
	} else {
		low = append(low, strings.ToLower(norm.NFC.String(text))...)
		start := -1
		for i := 0; i < len(low); {
			r, size := utf8.DecodeRune(low[i:])
			word := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
			switch {
			case word && start < 0:
				start = i
			case !word && start >= 0:
				ws = append(ws, wspan{int32(start), int32(i)})
				start = -1
			}
			i += size
		}
		if start >= 0 {
			ws = append(ws, wspan{int32(start), int32(len(low))})
		}
	}
	sc.low, sc.ws = low, ws
	return low, ws
}

// stemOf is a word's stem for ModelStems, and false for a stop word.
func stemOf(w []byte) ([]byte, bool) {
	s := string(w)
	cyr := false
	for _, r := range s {
		if unicode.Is(unicode.Cyrillic, r) {
			cyr = true
			break
		}
	}
	if cyr {
		if russian.IsStopWord(s) {
			return nil, false
		}
		return []byte(russian.Stem(s, false)), true
	}
	if english.IsStopWord(s) {
		return nil, false
	}
	return []byte(english.Stem(s, false)), true
}
