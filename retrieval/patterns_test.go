package retrieval

import "testing"

// TestPatternsBuild builds every lazily built pattern and word list, so
// that a pattern that does not compile fails here even where no other test
// reaches the code that uses it.
func TestPatternsBuild(t *testing.T) {
	addressRe()
	definitionRe()
	quantityWords()
	reAsksQuantity()
	reLeadNumber()
	reQuoted()
}
