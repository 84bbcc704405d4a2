package statetest

import (
	"fmt"
	"testing"

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
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.Commit(b.Context(), commits[i%2]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
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
		if len(got) != n {
			b.Fatalf("got %d vectors, want %d", len(got), n)
		}
	}
}
