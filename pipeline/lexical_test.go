package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// commitLog is a store that records the lexical changes of every commit.
type commitLog struct {
	state.Store
	mu      sync.Mutex
	upserts []state.LexicalRow
	deletes []state.LexicalRef
}

func (c *commitLog) Commit(ctx context.Context, cm state.Commit) error {
	c.mu.Lock()
	c.upserts = append(c.upserts, cm.LexicalUpserts...)
	c.deletes = append(c.deletes, cm.LexicalDeletes...)
	c.mu.Unlock()
	return c.Store.Commit(ctx, cm)
}

func (c *commitLog) reset() (upserts []state.LexicalRow, deletes []state.LexicalRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	upserts, deletes = c.upserts, c.deletes
	c.upserts, c.deletes = nil, nil
	return upserts, deletes
}

func lexCount(t *testing.T, s state.Store, kind string) int {
	t.Helper()
	n, err := s.LexicalCount(t.Context(), "docs", kind)
	require.NoError(t, err)
	return n
}

func TestLexicalIndexFollowsEdits(t *testing.T) {
	t.Parallel()
	root := copyCorpus(t, "rfc7239.txt", "constitutionrf.txt", "openchain-security-specification-1.1.md")
	b := setup(t, root, 256, 32)
	log := &commitLog{Store: b.store}
	b.p.Store = log

	first := b.sync(t, pipeline.Mode{})
	require.Equal(t, first.ChunksTotal, lexCount(t, b.store, state.LexicalChunk), "one lexical row per chunk")
	require.Equal(t, b.graph.Count(pipeline.LabelElement), lexCount(t, b.store, state.LexicalElement))
	require.Equal(t, b.graph.Count(pipeline.LabelTerm), lexCount(t, b.store, state.LexicalTerm))
	require.Positive(t, b.graph.Count(pipeline.LabelTerm))

	// Languages are detected per document, and Russian is stemmed as
	// Russian: "Президент … избирается" is indexed as "президент … избира".
	ru, _ := b.graph.Node("Document", "docs:constitutionrf.txt")
	require.Equal(t, "ru", ru[pipeline.PropLang])
	en, _ := b.graph.Node("Document", "docs:rfc7239.txt")
	require.Equal(t, "en", en[pipeline.PropLang])
	var sawRU bool
	for _, id := range b.graph.Nodes(pipeline.LabelChunk) {
		n, _ := b.graph.Node(pipeline.LabelChunk, id)
		lex, _ := n[pipeline.PropLex].(string)
		require.NotEmpty(t, lex, id)
		require.Equal(t, strings.ToLower(lex), lex)
		if strings.Contains(lex, "президент") && strings.Contains(lex, "избира") {
			sawRU = true
		}
	}
	require.True(t, sawRU)
	log.reset()

	// A run over unchanged input touches no row.
	again := b.sync(t, pipeline.Mode{})
	require.Zero(t, again.SinkStatements)
	up, del := log.reset()
	require.Empty(t, up)
	require.Empty(t, del)

	// An edit updates the rows of the chunks and elements it changed only.
	path := filepath.Join(root, "rfc7239.txt")
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	edited := strings.Replace(string(body), "The \"by\" parameter is used to disclose the interface", "The \"by\" parameter is used to unveil the interface", 1)
	require.NotEqual(t, string(body), edited)
	require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))
	edit := b.sync(t, pipeline.Mode{})
	up, del = log.reset()
	require.Empty(t, del)
	kinds := map[string]int{}
	for _, r := range up {
		kinds[r.Kind]++
		require.Equal(t, "rfc7239.txt", r.RecordKey)
	}
	require.Equal(t, edit.ChunksEmbedded, kinds[state.LexicalChunk], "the rewritten chunks")
	require.Equal(t, 1, kinds[state.LexicalElement], "the edited paragraph")
	require.Zero(t, kinds[state.LexicalTerm])
	st, ms, err := b.store.LexicalSearch(t.Context(), "docs", state.LexicalElement, []string{"unveil"})
	require.NoError(t, err)
	require.Equal(t, 1, st.DF["unveil"])
	require.Equal(t, "docs:rfc7239.txt › 5 › 5.1 › p1", ms[0].ID)

	// A deleted document takes its rows with it.
	require.NoError(t, os.Remove(path))
	b.sync(t, pipeline.Mode{AllowMassDelete: true})
	_, ms, err = b.store.LexicalSearch(t.Context(), "docs", state.LexicalElement, []string{"unveil"})
	require.NoError(t, err)
	require.Empty(t, ms)
	require.Equal(t, b.graph.Count(pipeline.LabelChunk), lexCount(t, b.store, state.LexicalChunk))
}
