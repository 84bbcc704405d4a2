package retrieval_test

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed/openai"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// conceptDims is the vector length of the concept embeddings server.
const conceptDims = 64

// concepts are the word families the test server puts in one dimension:
// a user's words and the document's for the same thing, so that a
// paraphrase lands close to the passage it asks about, as with a semantic
// embedding model.
var concepts = [][]string{
	{"kid", "kids", "child", "children", "child's", "kid's", "minor", "minors"},
	{"permission", "consent", "authorised", "authorized", "approval", "allow"},
	{"parent", "parent's", "parents", "parental", "guardian"},
	{"age", "years", "old", "younger"},
	{"information", "data", "details", "personal"},
	{"online", "internet", "website", "app", "society", "service", "services"},
	{"breach", "leak", "leaked", "hacked"},
	{"notify", "notification", "tell", "report", "inform"},
	{"erase", "erasure", "delete", "forgotten", "remove"},
}

// conceptAPI is an httptest server speaking the OpenAI embeddings API
// (POST /v1/embeddings, {"model", "input": [...]}), refusing what the API
// refuses (another path or method, no model, no or an empty input). A
// text's vector counts its words per concept (3 per word), every other
// word hashed into the remaining dimensions with weight 1, normalised.
func conceptAPI(t *testing.T) *httptest.Server {
	t.Helper()
	of := map[string]int{}
	for i, ws := range concepts {
		for _, w := range ws {
			of[w] = i
		}
	}
	embedText := func(text string) []float32 {
		v := make([]float64, conceptDims)
		for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r == '\'' || r >= '0' && r <= '9')
		}) {
			if c, ok := of[w]; ok {
				v[c] += 3
				continue
			}
			if len(w) < 4 {
				continue // stop words
			}
			h := uint32(2166136261)
			for i := 0; i < len(w); i++ {
				h = (h ^ uint32(w[i])) * 16777619
			}
			v[len(concepts)+int(h%uint32(conceptDims-len(concepts)))]++
		}
		var n float64
		for _, x := range v {
			n += x * x
		}
		out := make([]float32, conceptDims)
		for i, x := range v {
			if n > 0 {
				out[i] = float32(x / math.Sqrt(n))
			}
		}
		return out
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Input) == 0 {
			http.Error(w, `{"error":{"message":"invalid request"}}`, http.StatusBadRequest)
			return
		}
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		resp := struct {
			Object string         `json:"object"`
			Data   []datum        `json:"data"`
			Model  string         `json:"model"`
			Usage  map[string]int `json:"usage"`
		}{Object: "list", Model: req.Model, Usage: map[string]int{"prompt_tokens": 1, "total_tokens": 1}}
		for i, in := range req.Input {
			if in == "" {
				http.Error(w, `{"error":{"message":"'$.input' is invalid"}}`, http.StatusBadRequest)
				return
			}
			resp.Data = append(resp.Data, datum{Object: "embedding", Index: i, Embedding: embedText(in)})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// privacyDoc is a small regulation in the GDPR's style: the passage a
// paraphrase asks about, and others on other subjects.
const privacyDoc = `# Regulation on data

## Article 8 Conditions applicable to child's consent

1. Where the child is below the age of 16 years, processing shall be lawful only if and to the extent that consent is given or authorised by the holder of parental responsibility over the child.

## Article 17 Right to erasure

1. The data subject shall have the right to obtain from the controller the erasure of personal data concerning him or her without undue delay.

## Article 33 Notification of a personal data breach to the supervisory authority

1. In the case of a personal data breach, the controller shall without undue delay and, where feasible, not later than 72 hours after having become aware of it, notify the personal data breach to the supervisory authority.

## Article 50 International cooperation

1. The Commission and supervisory authorities shall take appropriate steps to develop international cooperation mechanisms to facilitate the effective enforcement of legislation for the protection of personal data.

## Article 99 Entry into force and application

1. This Regulation shall enter into force on the twentieth day following that of its publication in the Official Journal of the European Union.
`

// TestSemanticFloorKeepsParaphrase: with a semantic embedder (an
// OpenAI-compatible server whose vectors put a paraphrase close to its
// passage), a question in the user's words is answered, and once eval has
// calibrated the floor for that embedder it is answered with high
// confidence although it shares almost no word with the passage; an
// unrelated question is declined or marked weak.
func TestSemanticFloorKeepsParaphrase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "docs")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "privacy.md"), []byte(privacyDoc), 0o644))
	srv := conceptAPI(t)
	emb, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "concepts", MaxRetries: 0}, nil)
	require.NoError(t, err)
	store, err := sqlite.Open(t.Context(), filepath.Join(dir, "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	src, err := files.New("docs", config.FilesSource{Root: root, Anchor: "Document", MaxFileBytes: 1 << 20}, chunker.Formats(), nil,
		files.WithTextCheck(pipeline.TextCheck))
	require.NoError(t, err)
	p := &pipeline.Pipeline{
		Name: "docs", Sources: []sources.Source{src}, Embedder: emb, Sink: graphtest.New(),
		Store: store, Chunking: chunker.Options{MaxTokens: 120, OverlapTokens: 0, Tokenizer: tok},
		BatchSize: 8, MaxDeleteRatio: 1, Fingerprint: 1, Search: retrieval.DefaultConfig(),
	}
	_, err = p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)

	const kid = "Below what age does an online service need a parent's permission before using a kid's information?"
	res := search(t, p.Searcher(), kid, retrieval.Options{K: 3})
	require.False(t, res.Declined, "%s %+v", res.Reason, res.Evidence)
	require.NotEmpty(t, res.Hits)
	require.Contains(t, res.Hits[0].Text, "Article 8", "the passage ranks first by similarity")
	require.Equal(t, retrieval.ConfidenceLow, res.Confidence, "uncalibrated, few of the query's words: weak, with what is missing")
	require.NotEmpty(t, res.Missing)

	// eval calibrates the floor for this embedder on a golden set.
	golden := []retrieval.GoldenQuestion{
		{ID: "kid", Question: kid, Kind: retrieval.KindParaphrase, Answers: []string{"privacy.md Article 8"}},
		{ID: "leak", Question: "Our customer database got hacked: whom must we tell and how fast?", Kind: retrieval.KindParaphrase, Answers: []string{"privacy.md Article 33"}},
		{ID: "forget", Question: "Can I make a company remove the details it keeps about me?", Kind: retrieval.KindParaphrase, Answers: []string{"privacy.md Article 17"}},
		{ID: "force", Question: "When does the regulation enter into force?", Kind: retrieval.KindLexical, Answers: []string{"privacy.md Article 99"}},
		{ID: "coop", Question: "How do supervisory authorities cooperate internationally?", Kind: retrieval.KindLexical, Answers: []string{"privacy.md Article 50"}},
	}
	for i := range 6 {
		golden = append(golden, retrieval.GoldenQuestion{ID: "kid" + string(rune('a'+i)), Question: kid, Kind: retrieval.KindParaphrase, Answers: []string{"privacy.md Article 8"}})
	}
	golden = append(golden,
		retrieval.GoldenQuestion{ID: "fee", Question: "What fee does the Commission charge for cooperation mechanisms?", Kind: retrieval.KindUnanswerable},
		retrieval.GoldenQuestion{ID: "weather", Question: "Which football club won the league championship?", Kind: retrieval.KindUnanswerable},
	)
	rep, err := p.Searcher().Eval(t.Context(), golden, retrieval.EvalOptions{K: 3, Modes: []string{retrieval.ModeHybrid}})
	require.NoError(t, err)
	require.Empty(t, rep.Unresolved)
	cal := rep.Floor.Calibration
	require.Equal(t, emb.Model(), cal.Embedder)
	require.Positive(t, cal.HighCosine, "%+v", cal)

	// Stored with the embedder's fingerprint, read back for it only.
	path := filepath.Join(dir, "calibration.json")
	require.NoError(t, retrieval.WriteCalibration(path, cal))
	got, err := retrieval.LoadCalibration(path, emb.Model())
	require.NoError(t, err)
	require.Equal(t, cal, *got)
	other, err := retrieval.LoadCalibration(path, "hashing/hashing-v1/384")
	require.NoError(t, err)
	require.Nil(t, other, "another embedder's calibration does not apply")

	// Keep the floor's own thresholds: only the calibrated similarity can
	// lift the paraphrase's weak lexical evidence.
	vouching := *got
	vouching.MinEvidence, vouching.DeclineEvidence = 0, 0
	p.Search.Floor.Calibration = &vouching
	res = search(t, p.Searcher(), kid, retrieval.Options{K: 3})
	require.False(t, res.Declined)
	require.Contains(t, res.Hits[0].Text, "Article 8")
	require.Equal(t, retrieval.ConfidenceHigh, res.Confidence, "the calibrated similarity vouches for the paraphrase: %s %+v", res.Reason, res.Evidence)

	res = search(t, p.Searcher(), "Which football club won the league championship?", retrieval.Options{K: 3})
	require.True(t, res.Declined || res.Confidence == retrieval.ConfidenceLow, "%+v", res)
}
