package chunker

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tiktoken-go/tokenizer"
)

// Tokenizer counts tokens the way OpenAI models do (byte-pair encoding,
// github.com/tiktoken-go/tokenizer). Its vocabularies are compiled into the
// binary, so it needs no download. It is safe for concurrent use.
//
// Speed: counting runs at a few MB/s on one core (measured by
// BenchmarkTokenizerCount); Split counts each element once and each chunk's
// final text once more, so tokenising dominates its cost.
//
// The vocabulary (tens of MB of tables) is built on first use, not by
// NewTokenizer: a run that counts no token — a no-op, a table pipeline
// whose texts are all short — never loads it.
type Tokenizer struct {
	name  string
	enc   tokenizer.Encoding
	once  sync.Once
	codec tokenizer.Codec
	err   error
	// tokenized, when set (tests), sums the bytes Count and Tokens see.
	tokenized *atomic.Int64
}

// Encodings supported by NewTokenizer.
const (
	// EncodingCL100K is the encoding of text-embedding-3-*, text-embedding-ada-002 and GPT-4.
	EncodingCL100K = "cl100k_base"
	// EncodingO200K is the encoding of GPT-4o and later models.
	EncodingO200K = "o200k_base"
)

// NewTokenizer returns a tokenizer for an encoding name: "cl100k_base"
// (also the default for "") or "o200k_base". Any other name is an error.
func NewTokenizer(name string) (*Tokenizer, error) {
	var enc tokenizer.Encoding
	switch name {
	case "", EncodingCL100K:
		name, enc = EncodingCL100K, tokenizer.Cl100kBase
	case EncodingO200K:
		enc = tokenizer.O200kBase
	default:
		return nil, fmt.Errorf("tokenizer %q: unknown encoding (want %s or %s)", name, EncodingCL100K, EncodingO200K)
	}
	return &Tokenizer{name: name, enc: enc}, nil
}

// load builds the vocabulary once. The encodings are compiled in, so this
// fails only for a broken build, which a Tokenizer reports as the
// one-token-per-4-bytes estimate (see Count).
func (t *Tokenizer) load() tokenizer.Codec {
	t.once.Do(func() {
		t.codec, t.err = tokenizer.Get(t.enc)
	})
	return t.codec
}

var (
	defaultTokOnce sync.Once
	defaultTok     *Tokenizer
)

// DefaultTokenizer is a shared cl100k_base tokenizer, built on first use.
func DefaultTokenizer() *Tokenizer {
	defaultTokOnce.Do(func() {
		t, err := NewTokenizer(EncodingCL100K)
		if err != nil {
			panic(err) // the encoding is compiled in; this cannot fail
		}
		defaultTok = t
	})
	return defaultTok
}

// Name is the encoding name ("cl100k_base").
func (t *Tokenizer) Name() string { return t.name }

// Count is the number of tokens in s. Invalid UTF-8 is counted byte-wise
// as the encoder sees it; the encoder reports errors only for a failed
// pre-tokenising match, and then Count falls back to one token per 4 bytes
// rounded up, an upper-side estimate for English text.
func (t *Tokenizer) Count(s string) int {
	if s == "" {
		return 0
	}
	if t.tokenized != nil {
		t.tokenized.Add(int64(len(s)))
	}
	c := t.load()
	if c == nil {
		return (len(s) + 3) / 4
	}
	n, err := c.Count(s)
	if err != nil {
		return (len(s) + 3) / 4
	}
	return n
}

// Tokens splits s into its tokens' byte strings; their concatenation is s.
// A token may hold part of a multi-byte character.
func (t *Tokenizer) Tokens(s string) []string {
	if s == "" {
		return nil
	}
	if t.tokenized != nil {
		t.tokenized.Add(int64(len(s)))
	}
	c := t.load()
	if c == nil {
		return []string{s}
	}
	_, toks, err := c.Encode(s)
	if err != nil {
		return []string{s}
	}
	return toks
}
