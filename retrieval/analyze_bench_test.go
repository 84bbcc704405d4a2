package retrieval

import "testing"

// BenchmarkRowLexical is what a table row's lexical row costs: its
// language detected, then its lexical text, for an English and a Russian
// description; /detect the same through LexicalTextDetect.
func BenchmarkRowLexical(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"ascii", "Horses, asses, mules and hinnies; live"}, {"cyrillic", "Лошади, ослы, мулы и лошаки живые"},
	} {
		text := c.text
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				LexicalText(text, DetectLanguage(text))
			}
		})
		b.Run(c.name+"/detect", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				LexicalTextDetect(text)
			}
		})
	}
}
