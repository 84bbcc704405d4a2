package chunker_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/chunker/baseline"
)

// BenchmarkSplit parses and chunks each corpus document; MB/s is input
// bytes per second.
func BenchmarkSplit(b *testing.B) {
	for _, name := range corpusDocs {
		b.Run(name, func(b *testing.B) {
			raw := readDoc(b, name)
			format, _ := chunker.FormatForPath(name)
			b.SetBytes(int64(len(raw)))
			var chunks []chunker.Chunk
			for b.Loop() {
				root, err := chunker.Parse(format, raw)
				require.NoError(b, err)
				chunks, err = chunker.Split(name, root, testOpts)
				require.NoError(b, err)
			}
			b.ReportMetric(float64(len(chunks)), "chunks")
			sum, mx, mn := 0, 0, 1<<30
			for _, c := range chunks {
				sum += c.Tokens
				mx, mn = max(mx, c.Tokens), min(mn, c.Tokens)
			}
			b.ReportMetric(float64(sum)/float64(len(chunks)), "tokens-mean")
			b.ReportMetric(float64(mn), "tokens-min")
			b.ReportMetric(float64(mx), "tokens-max")
		})
	}
}

// BenchmarkParse measures the parsers alone.
func BenchmarkParse(b *testing.B) {
	for _, name := range corpusDocs {
		b.Run(name, func(b *testing.B) {
			raw := readDoc(b, name)
			format, _ := chunker.FormatForPath(name)
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				_, err := chunker.Parse(format, raw)
				require.NoError(b, err)
			}
		})
	}
}

// BenchmarkTokenizerCount measures token counting throughput.
func BenchmarkTokenizerCount(b *testing.B) {
	for _, name := range []string{"rfc7231.txt", "constitutionrf.txt"} {
		b.Run(name, func(b *testing.B) {
			raw := string(readDoc(b, name))
			tok := chunker.DefaultTokenizer()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				tok.Count(raw)
			}
		})
	}
}

// BenchmarkBaselines measures the two baselines' throughput.
func BenchmarkBaselines(b *testing.B) {
	tok := chunker.DefaultTokenizer()
	for _, name := range []string{"rfc7231.txt", "constitutionrf.txt"} {
		raw := string(readDoc(b, name))
		b.Run("fixed/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				baseline.FixedWindow(raw, testOpts.MaxTokens, testOpts.OverlapTokens, tok)
			}
		})
		b.Run("recursive/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				baseline.Recursive(raw, testOpts.MaxTokens, tok)
			}
		})
	}
}

// BenchmarkEditLocality reports how many chunks one-sentence edits change
// (mean and max over 15 edits spread over the document) for the structural
// chunker and the two baselines. The time per op is that of the whole
// measurement and is not meaningful.
func BenchmarkEditLocality(b *testing.B) {
	for _, name := range []string{"rfc7231.txt", "constitutionrf.txt"} {
		b.Run(name, func(b *testing.B) {
			var r localityResult
			for b.Loop() {
				r = measureLocality(b, name, 15)
			}
			report := func(label string, xs []int) {
				sum, mx := 0, 0
				for _, x := range xs {
					sum += x
					mx = max(mx, x)
				}
				b.ReportMetric(float64(sum)/float64(len(xs)), label+"-changed/edit")
				b.ReportMetric(float64(mx), label+"-changed-max")
			}
			report("structural", r.structural)
			report("fixed", r.fixed)
			report("recursive", r.recursive)
		})
	}
}

// BenchmarkCrossRefs finds and resolves each document's cross-references
// and reports how many same-document references resolve (resolved/op is
// the share, 0..1) and how many are external.
func BenchmarkCrossRefs(b *testing.B) {
	for _, name := range corpusDocs {
		b.Run(name, func(b *testing.B) {
			root := parseDoc(b, name)
			var refs []chunker.Ref
			var res map[int]string
			var un []int
			for b.Loop() {
				refs = chunker.CrossRefs(root)
				res, un = chunker.Resolve(root, refs)
			}
			same := len(res) + len(un)
			if same > 0 {
				b.ReportMetric(float64(len(res))/float64(same), "resolved/op")
			}
			b.ReportMetric(float64(same), "same-doc-refs")
			b.ReportMetric(float64(len(refs)-same), "external-refs")
			b.ReportMetric(float64(len(chunker.Terms(root))), "terms")
		})
	}
}

// BenchmarkCrossRefsOneLine reads the cross-references of 2 MiB of
// text on one line (a corpus document with its line breaks taken out),
// one element whose text the reference scanner reads whole.
func BenchmarkCrossRefsOneLine(b *testing.B) {
	for _, name := range []string{"rfc7231.txt", "constitutionrf.txt"} {
		b.Run(name, func(b *testing.B) {
			words := strings.Join(strings.Fields(string(readDoc(b, name))), " ")
			text := strings.Repeat(words+" ", 2<<20/len(words)+1)[:2<<20]
			root, err := chunker.Parse("txt", []byte(text))
			require.NoError(b, err)
			b.SetBytes(int64(len(text)))
			var refs []chunker.Ref
			for b.Loop() {
				refs = chunker.CrossRefs(root)
			}
			b.ReportMetric(float64(len(refs)), "refs")
		})
	}
}
