package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kgsync/kgsync/internal/corpus"

	"github.com/kgsync/kgsync/embed/hashing"
)

// RepoRoot returns the repository root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := corpus.RepoRoot()
	if err != nil {
		t.Fatalf("crashtest: %v", err)
	}
	return dir
}

// CorpusDocs returns the corpus's docs directory (internal/corpus).
func CorpusDocs(t testing.TB) string { t.Helper(); return corpus.Docs(t) }

// BuildKgsync builds ./cmd/kgsync into dir with the go command on PATH and
// returns the binary's path.
func BuildKgsync(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "kgsync")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kgsync")
	cmd.Dir = RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("crashtest: go build ./cmd/kgsync: %v\n%s", err, out)
	}
	return bin
}

// Outcome is how one process run ended.
type Outcome struct {
	// Killed reports that the process was sent SIGKILL and died of it.
	Killed bool
	// ExitCode is the exit status (-1 when killed).
	ExitCode int
	Stdout   string
	Stderr   string
	Duration time.Duration
}

// Exec runs bin with args in dir. When killAfter > 0 the process gets
// SIGKILL that long after it started, unless it has exited by then. An
// error means the process could not be started or waited for; a non-zero
// exit is reported in Outcome.
func Exec(ctx context.Context, dir, bin string, killAfter time.Duration, args ...string) (Outcome, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Outcome{}, fmt.Errorf("start %s: %w", bin, err)
	}
	done := make(chan struct{})
	if killAfter > 0 {
		timer := time.NewTimer(killAfter)
		go func() {
			select {
			case <-timer.C:
				_ = cmd.Process.Signal(syscall.SIGKILL)
			case <-done:
				timer.Stop()
			}
		}()
	}
	err := cmd.Wait()
	close(done)
	out := Outcome{Stdout: stdout.String(), Stderr: stderr.String(), Duration: time.Since(start), ExitCode: cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			out.Killed = true
		}
	default:
		return out, fmt.Errorf("wait %s: %w", bin, err)
	}
	return out, nil
}

// EmbedServer is an OpenAI-compatible embeddings endpoint for tests that
// answers with the hashing embedder's vectors (so its graph equals a run
// with provider hashing) and counts every text it is asked to embed, also
// for processes killed before they stored the answer.
type EmbedServer struct {
	srv  *httptest.Server
	emb  *hashing.Embedder
	mu   sync.Mutex
	seen int
}

// NewEmbedServer starts the endpoint, closed when the test ends. Its
// vectors are hashing.New(model, dims)'s.
func NewEmbedServer(t testing.TB, model string, dims int) *EmbedServer {
	t.Helper()
	s := &EmbedServer{emb: hashing.New(model, dims)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to configure (requests go to URL + "/embeddings").
func (s *EmbedServer) URL() string { return s.srv.URL }

// Texts returns the number of texts received so far.
func (s *EmbedServer) Texts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

func (s *EmbedServer) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.seen += len(req.Input)
	s.mu.Unlock()
	vecs, err := s.emb.Embed(r.Context(), req.Input)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	resp := struct {
		Data []item `json:"data"`
	}{}
	for i, v := range vecs {
		resp.Data = append(resp.Data, item{Index: i, Embedding: v})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
