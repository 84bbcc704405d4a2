package statetest

import (
	"fmt"
	"testing"

	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// BenchCommit1000 measures one Commit of 1,000 records with 4 chunks each
// (about 300 bytes of props per chunk) plus a cursor. After the first
// iteration every commit rewrites existing rows, as a changed page does.
func BenchCommit1000(b *testing.B, s state.Store) {
	const records, perRecord = 1000, 4
	props := []byte(fmt.Sprintf(`{"text":%q,"address":"1.2.3","position":0}`, make([]byte, 240)))
	mk := func(round int) state.Commit {
		c := state.Commit{Pipeline: "bench", Cursors: map[string]string{"docs": fmt.Sprint(round)},
			ReplaceChunks: make(map[state.RecordRef][]state.Chunk, records)}
		for i := range records {
			key := fmt.Sprintf("doc-%04d", i)
			c.Records = append(c.Records, state.Record{Source: "docs", Key: key, Hash: uint64(round*records + i),
				Fingerprint: 1 << 63, Anchor: "document", Props: props})
			cs := make([]state.Chunk, perRecord)
			for j := range cs {
				cs[j] = state.Chunk{ID: fmt.Sprintf("%s#%d", key, j), Hash: uint64(round<<20 + i<<4 + j),
					TextHash: uint64(i<<4 + j), Position: j, Props: props}
			}
			c.ReplaceChunks[state.RecordRef{Source: "docs", Key: key}] = cs
		}
		return c
	}
	commits := [2]state.Commit{mk(0), mk(1)}
	commitAlternately(b, s, commits)
	n, err := s.ChunkCount(b.Context(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	if n != records*perRecord {
		b.Fatalf("chunk count %d, want %d", n, records*perRecord)
	}
}

// BenchEmbeddingsGet1000 measures one EmbeddingsGet of 1,000 cached
// 1536-dimension vectors (6 KiB each).
func BenchEmbeddingsGet1000(b *testing.B, s state.Store) {
	const n, dims = 1000, 1536
	vecs := make(map[uint64][]float32, n)
	hashes := make([]uint64, 0, n)
	for i := range uint64(n) {
		h := i*0x9e3779b97f4a7c15 + 1
		v := make([]float32, dims)
		for j := range v {
			v[j] = float32(i) + float32(j)/dims
		}
		vecs[h] = v
		hashes = append(hashes, h)
	}
	benchGet(b, s, vecs, hashes, n)
}

// benchGet stores vecs under the model "bench", then measures one
// EmbeddingsGet of hashes, which must find want vectors.
func benchGet(b *testing.B, s state.Store, vecs map[uint64][]float32, hashes []uint64, want int) {
	if err := s.EmbeddingsPut(b.Context(), "bench", vecs); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := s.EmbeddingsGet(b.Context(), "bench", hashes)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != want {
			b.Fatalf("got %d vectors, want %d", len(got), want)
		}
	}
}

// BenchLexicalEdit measures the lexical-index part of one edit's commit:
// against an index of 20,000 rows (about the chunks and elements of a
// thousand-page corpus), the rows an edited paragraph changes — the
// element and the two chunks holding it (one in its overlap) — are
// replaced, as the run's commit does.
func BenchLexicalEdit(b *testing.B, s state.Store) {
	const rows = 20000
	words := []string{"proxi", "forward", "header", "field", "request", "server", "client", "cach", "respons", "method",
		"президент", "федерац", "срок", "статья", "закон", "anchur", "puert", "evacu", "salid", "recorrido"}
	text := func(i, n int) string {
		var sb []byte
		for j := range n {
			if j > 0 {
				sb = append(sb, ' ')
			}
			sb = append(sb, words[(i*7+j*13)%len(words)]...)
			sb = append(sb, fmt.Sprint((i+j)%97)...)
		}
		return string(sb)
	}
	row := func(i int, kind string, round int) state.LexicalRow {
		return state.LexicalRow{LexicalRef: state.LexicalRef{Source: "docs", RecordKey: fmt.Sprintf("doc-%03d", i/200),
			ID: fmt.Sprintf("%s-%05d", kind, i)}, Kind: kind, Text: text(i+round, 80)}
	}
	for start := 0; start < rows; start += 1000 {
		c := state.Commit{Pipeline: "bench"}
		for d := start / 200; d < (start+1000)/200; d++ {
			c.Records = append(c.Records, state.Record{Source: "docs", Key: fmt.Sprintf("doc-%03d", d), Hash: uint64(d) + 1})
		}
		for i := start; i < start+1000; i++ {
			kind := state.LexicalChunk
			if i%3 == 0 {
				kind = state.LexicalElement
			}
			c.LexicalUpserts = append(c.LexicalUpserts, row(i, kind, 0))
		}
		if err := s.Commit(b.Context(), c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		at := (i * 37) % (rows - 3)
		at -= at % 3
		c := state.Commit{Pipeline: "bench", LexicalUpserts: []state.LexicalRow{
			row(at, state.LexicalElement, i+1), row(at+1, state.LexicalChunk, i+1), row(at+2, state.LexicalChunk, i+1),
		}}
		if err := s.Commit(b.Context(), c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchCommitTableRows1000 measures one Commit of a first sync's batch of
// 1,000 new table rows, each with about 300 bytes of props and its node's
// lexical row, into a store that grows by each iteration's rows. Keys
// arrive in no order (a hash of the row number), as a CSV's do.
func BenchCommitTableRows1000(b *testing.B, s state.Store) {
	const rows = 1000
	props := []byte(fmt.Sprintf(`{"id":"hs_code:x","node":{"description":%q}}`, make([]byte, 260)))
	mk := func(round int) state.Commit {
		c := state.Commit{Pipeline: "bench"}
		for i := range rows {
			n := uint64(round*rows + i)
			key := fmt.Sprintf("hs_code:%016x", n*0x9e3779b97f4a7c15)
			c.Records = append(c.Records, state.Record{Source: "csv", Key: key, Hash: n + 1, Fingerprint: 1 << 62,
				Anchor: "cn_code", Props: props, Ord: int64(n+1) << 20})
			c.LexicalUpserts = append(c.LexicalUpserts, state.LexicalRow{
				LexicalRef: state.LexicalRef{Source: "csv", RecordKey: key, ID: key}, Kind: state.LexicalNode,
				Text: fmt.Sprintf("horses asses mules hinnies live %d", n%977)})
		}
		return c
	}
	b.ReportAllocs()
	round := 0
	for b.Loop() {
		b.StopTimer()
		c := mk(round)
		round++
		b.StartTimer()
		if err := s.Commit(b.Context(), c); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	wantLexicalRows(b, s, state.LexicalNode, round*rows)
}

// commitAlternately times b's loop of commits, commits[0] and
// commits[1] in turn.
func commitAlternately(b *testing.B, s state.Store, commits [2]state.Commit) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.Commit(b.Context(), commits[i%2]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
}

// wantLexicalRows fails b unless the bench pipeline holds want lexical
// rows of kind.
func wantLexicalRows(b *testing.B, s state.Store, kind string, want int) {
	b.Helper()
	n, err := s.LexicalCount(b.Context(), "bench", kind)
	if err != nil {
		b.Fatal(err)
	}
	if n != want {
		b.Fatalf("lexical rows %d, want %d", n, want)
	}
}

// BenchRecordKeysWithPrefix measures one RecordKeysWithPrefix of 1,000
// prefixes (the children of a partial listing's 1,000 records, as after a
// Grist /compare) in a source of 20,000 records, 10 of which are children.
func BenchRecordKeysWithPrefix(b *testing.B, s state.Store) {
	const records, asked = 20000, 1000
	for start := 0; start < records; start += 1000 {
		c := state.Commit{Pipeline: "bench"}
		for i := start; i < start+1000; i++ {
			key := fmt.Sprintf("HSCodes:%06d", i)
			if i%2000 == 1 {
				key = fmt.Sprintf("HSCodes:%06d", i-1) + sources.ChildMarker + "note"
			}
			c.Records = append(c.Records, state.Record{Source: "grist", Key: key, Hash: uint64(i) + 1})
		}
		if err := s.Commit(b.Context(), c); err != nil {
			b.Fatal(err)
		}
	}
	prefixes := make([]string, asked)
	for i := range prefixes {
		prefixes[i] = fmt.Sprintf("HSCodes:%06d", i*records/asked) + sources.ChildMarker
	}
	b.ReportAllocs()
	for b.Loop() {
		keys, err := s.RecordKeysWithPrefix(b.Context(), "bench", "grist", prefixes)
		if err != nil {
			b.Fatal(err)
		}
		if len(keys) != records/2000 {
			b.Fatalf("%d keys, want %d", len(keys), records/2000)
		}
	}
}

// BenchEmbeddingsPut1000 measures one EmbeddingsPut of 1,000 new
// 32-dimension vectors (the hashing embedder's size) into an empty model.
func BenchEmbeddingsPut1000(b *testing.B, s state.Store) {
	const n, dims = 1000, 32
	vecs := make(map[uint64][]float32, n)
	for i := range uint64(n) {
		v := make([]float32, dims)
		for j := range v {
			v[j] = float32(i) + float32(j)/dims
		}
		vecs[i*0x9e3779b97f4a7c15+1] = v
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.EmbeddingsPut(b.Context(), fmt.Sprint("bench", i), vecs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchEmbeddingsGetMiss1000 measures one EmbeddingsGet of 1,000 hashes
// of which none is cached, as on a first sync, against a model holding
// 1,000 other vectors.
func BenchEmbeddingsGetMiss1000(b *testing.B, s state.Store) {
	const n = 1000
	vecs := make(map[uint64][]float32, n)
	hashes := make([]uint64, 0, n)
	for i := range uint64(n) {
		vecs[i*0x9e3779b97f4a7c15+1] = []float32{float32(i)}
		hashes = append(hashes, i*0x9e3779b97f4a7c15+2)
	}
	benchGet(b, s, vecs, hashes, 0)
}

// BenchLexicalReplace4000 measures one Commit that replaces the 4,000
// stored lexical rows of 1,000 stored records (4 rows each), every row's
// text and length changed, as a re-sync after a mapping change does.
func BenchLexicalReplace4000(b *testing.B, s state.Store) {
	const records, perRecord = 1000, 4
	mk := func(round int) state.Commit {
		c := state.Commit{Pipeline: "bench"}
		text := "alpha beta gamma"
		if round%2 == 1 {
			text += " delta"
		}
		for i := range records {
			key := fmt.Sprintf("k%06d", i)
			c.Records = append(c.Records, state.Record{Source: "s", Key: key, Hash: uint64(round + 1)})
			for n := range perRecord {
				c.LexicalUpserts = append(c.LexicalUpserts, state.LexicalRow{
					LexicalRef: state.LexicalRef{Source: "s", RecordKey: key, ID: fmt.Sprintf("%s#%d", key, n)},
					Kind:       state.LexicalChunk, Text: fmt.Sprintf("%s %d", text, i)})
			}
		}
		return c
	}
	commits := [2]state.Commit{mk(1), mk(0)}
	if err := s.Commit(b.Context(), commits[1]); err != nil {
		b.Fatal(err)
	}
	commitAlternately(b, s, commits)
	wantLexicalRows(b, s, state.LexicalChunk, records*perRecord)
}
