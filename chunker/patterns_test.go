package chunker

import "testing"

// TestPatternsBuild builds every lazily built pattern group and parser, so
// that a pattern that does not compile fails here even where no other test
// reaches the code that uses it.
func TestPatternsBuild(t *testing.T) {
	addrSyntax()
	crossrefRe()
	docxRe()
	htmlRe()
	mdRe()
	mdParser()
	noiseRe()
	partsRe()
	pdfRe()
	reflowRe()
	refRe()
	sentenceEnd()
	termsRe()
	txtRe()
}
