package chunker_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

// TestDocumentIDsStatedNames: an act is named by what its title states —
// its citation ("Regulation (EU) 2016/679"), the short name it gives
// itself in parentheses and that name's initials ("General Data
// Protection Regulation", "GDPR"), a Russian federal law's number
// ("152-ФЗ") — never by an acronym built from the words of its subject
// when it states its own name.
func TestDocumentIDsStatedNames(t *testing.T) {
	gdpr := chunker.DocumentIDs(&chunker.Element{Title: "REGULATION (EU) 2016/679 OF THE EUROPEAN PARLIAMENT AND OF THE COUNCIL of 27 April 2016 " +
		"on the protection of natural persons with regard to the processing of personal data and on the free movement of such data, " +
		"and repealing Directive 95/46/EC (General Data Protection Regulation) (Text with EEA relevance)"}, "docs/gdpr.html")
	for _, want := range []string{"Regulation (EU) 2016/679", "General Data Protection Regulation", "GDPR", "gdpr.html"} {
		require.Contains(t, gdpr, want)
	}
	require.NotContains(t, gdpr, "FMSDR", "an acronym of the title's words, not a name the act has")
	require.NotContains(t, gdpr, "Free Movement of Such Data Regulation")
	require.NotContains(t, gdpr, "TWER", "\"(Text with EEA relevance)\" is no name")

	law := chunker.DocumentIDs(&chunker.Element{Title: `Федеральный закон от 27.07.2006 N 152-ФЗ "О персональных данных"`}, "docs/152fz.txt")
	require.Contains(t, law, "152-ФЗ")
	require.Contains(t, law, "Федеральный закон № 152-ФЗ")
}
