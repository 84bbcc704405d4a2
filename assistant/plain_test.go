package assistant

import (
	"testing"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j/dbtype"
	"github.com/stretchr/testify/require"
)

// TestPlainKeepsRowAttributes: a cypher answer's nodes lose what kgsync
// adds for search (vectors, the texts of the text indexes), and a table
// row keeps its own attributes named lex or embedding.
func TestPlainKeepsRowAttributes(t *testing.T) {
	row := plain(dbtype.Node{Labels: []string{"glossary"}, Props: map[string]any{
		"id": "glossary:1", "lex": "lexeme", "embedding": "a word", "_lex": "lexeme a word", "lex_embedding": []float32{1, 2},
	}})
	require.Equal(t, map[string]any{"labels": []string{"glossary"}, "props": map[string]any{
		"id": "glossary:1", "lex": "lexeme", "embedding": "a word"}}, row)
	chunk := plain(dbtype.Node{Labels: []string{"Chunk"}, Props: map[string]any{
		"id": "c1", "text": "t", "lex": "t", "embedding": []float32{1, 2},
	}})
	require.Equal(t, map[string]any{"labels": []string{"Chunk"}, "props": map[string]any{"id": "c1", "text": "t"}}, chunk)
	term := plain(dbtype.Node{Labels: []string{"Term"}, Props: map[string]any{"id": "t1", "lex": "t"}})
	require.Equal(t, map[string]any{"labels": []string{"Term"}, "props": map[string]any{"id": "t1"}}, term)
}
