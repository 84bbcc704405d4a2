// Package baseline holds the two chunkers that the structural chunker is
// measured against in benchmarks and edit-locality tests: a fixed sliding
// window of tokens, and the recursive separator splitter that popular RAG
// toolkits use by default. Neither knows anything about document structure.
package baseline

import (
	"strings"

	"github.com/kgsync/kgsync/chunker"
)

// FixedWindow cuts text into windows of size tokens, each starting
// size-overlap tokens after the previous one (a window of the last tokens
// closes the text). A window's edges may fall inside a multi-byte character;
// the partial bytes are dropped, as decoding with errors="ignore" would.
// Whitespace-only windows are skipped. size < 1 yields nil; overlap is
// clamped to [0, size-1].
func FixedWindow(text string, size, overlap int, tok *chunker.Tokenizer) []string {
	if size < 1 {
		return nil
	}
	overlap = max(0, min(overlap, size-1))
	toks := tok.Tokens(text)
	step := size - overlap
	var out []string
	for i := 0; i < len(toks); i += step {
		end := min(i+size, len(toks))
		w := strings.ToValidUTF8(strings.Join(toks[i:end], ""), "")
		if strings.TrimSpace(w) != "" {
			out = append(out, w)
		}
		if end == len(toks) {
			break
		}
	}
	return out
}

// separators are tried in order: paragraphs, lines, sentences, words.
var separators = []string{"\n\n", "\n", ". ", " "}

// Recursive splits text on the first separator that occurs in it (blank
// lines, then line breaks, then sentence ends, then spaces), splits any
// part still longer than maxTokens with the next separator (a part with no
// separator left is cut into token windows), and merges neighbouring parts
// greedily while the sum of their token counts, separators included, stays
// within maxTokens. This is the "recursive character text splitter" with a
// token length function, without overlap. Whitespace-only parts are
// dropped. maxTokens < 1 yields nil.
func Recursive(text string, maxTokens int, tok *chunker.Tokenizer) []string {
	if maxTokens < 1 {
		return nil
	}
	return recursive(text, separators, maxTokens, tok)
}

func recursive(text string, seps []string, maxTokens int, tok *chunker.Tokenizer) []string {
	sep, rest := "", []string(nil)
	for k, s := range seps {
		if strings.Contains(text, s) {
			sep, rest = s, seps[k+1:]
			break
		}
	}
	if sep == "" {
		return FixedWindow(text, maxTokens, 0, tok)
	}
	parts := strings.Split(text, sep)
	if sep == ". " {
		for k := range parts[:len(parts)-1] {
			parts[k] += "."
		}
		sep = " "
	}
	var out, good []string
	var goodTokens []int
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			continue
		}
		n := tok.Count(p)
		if n <= maxTokens {
			good = append(good, p)
			goodTokens = append(goodTokens, n)
			continue
		}
		out = append(out, merge(good, goodTokens, sep, maxTokens, tok)...)
		good, goodTokens = nil, nil
		out = append(out, recursive(p, rest, maxTokens, tok)...)
	}
	return append(out, merge(good, goodTokens, sep, maxTokens, tok)...)
}

// merge joins parts with sep greedily while their summed token counts stay
// within maxTokens.
func merge(parts []string, tokens []int, sep string, maxTokens int, tok *chunker.Tokenizer) []string {
	var out []string
	sepTokens := tok.Count(sep)
	start, total := 0, 0
	for k := range parts {
		add := tokens[k]
		if k > start {
			add += sepTokens
		}
		if k > start && total+add > maxTokens {
			out = append(out, strings.TrimSpace(strings.Join(parts[start:k], sep)))
			start, total, add = k, 0, tokens[k]
		}
		total += add
	}
	if start < len(parts) {
		out = append(out, strings.TrimSpace(strings.Join(parts[start:], sep)))
	}
	return out
}
