package bolttest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/config"
	"github.com/stretchr/testify/require"
)

// newDriver connects the real driver to s and closes it at cleanup (before
// the server's own cleanup, which was registered earlier).
func newDriver(t *testing.T, s *Server, auth neo4j.AuthToken, opts ...func(*config.Config)) neo4j.DriverWithContext {
	t.Helper()
	d, err := neo4j.NewDriverWithContext(s.URI(), auth, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close(context.Background())) })
	return d
}

// newSession opens a driver on s without auth and a session on it; both
// are closed when the test ends (the session first).
func newSession(t *testing.T, s *Server, opts ...func(*config.Config)) neo4j.SessionWithContext {
	t.Helper()
	sess := newDriver(t, s, neo4j.NoAuth(), opts...).NewSession(context.Background(), neo4j.SessionConfig{})
	t.Cleanup(func() { require.NoError(t, sess.Close(context.Background())) })
	return sess
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestConnect(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	require.True(t, strings.HasPrefix(s.URI(), "bolt://127.0.0.1:"), s.URI())

	d := newDriver(t, s, neo4j.NoAuth())
	require.NoError(t, d.VerifyConnectivity(ctx))
	info, err := d.GetServerInfo(ctx)
	require.NoError(t, err)
	require.Equal(t, ServerAgent, info.Agent())
	// The server answers 5.2, Memgraph's version for this driver.
	require.Equal(t, "5.2", fmt.Sprintf("%d.%d", info.ProtocolVersion().Major, info.ProtocolVersion().Minor))

	d2 := newDriver(t, s, neo4j.BasicAuth("memgraph", "secret", ""))
	require.NoError(t, d2.VerifyConnectivity(ctx))

	logons := s.Logons()
	require.Len(t, logons, 2)
	require.Equal(t, "none", logons[0]["scheme"])
	require.Equal(t, map[string]any{"scheme": "basic", "principal": "memgraph", "credentials": "secret"}, logons[1])

	// Driver quirk worth knowing: v5.28 proposes the manifest handshake
	// (0x000001FF) first, then 5.8 with range 8, 4.4 with range 2, 3.0
	// (neo4j/internal/bolt/connect.go); the server skips the manifest.
	s.mu.Lock()
	props := s.proposals[0]
	s.mu.Unlock()
	require.Equal(t, [4]uint32{0x000001FF, 0x00080805, 0x00020404, 0x00000003}, props)
	require.Empty(t, s.Errors())
}

func TestRequireAuth(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	s.RequireAuth("memgraph", "right")

	err := newDriver(t, s, neo4j.BasicAuth("memgraph", "wrong", "")).VerifyConnectivity(ctx)
	var nerr *neo4j.Neo4jError
	require.ErrorAs(t, err, &nerr)
	require.Equal(t, CodeUnauthenticated, nerr.Code)

	require.NoError(t, newDriver(t, s, neo4j.BasicAuth("memgraph", "right", "")).VerifyConnectivity(ctx))
}

func TestAutoCommitDDL(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	sess := newSession(t, s)

	res, err := sess.Run(ctx, "CREATE INDEX ON :Chunk(id)", nil)
	require.NoError(t, err)
	sum, err := res.Consume(ctx)
	require.NoError(t, err)
	require.Equal(t, neo4j.StatementTypeWriteOnly, sum.StatementType())

	qs := s.Queries()
	require.Len(t, qs, 1)
	require.Equal(t, "CREATE INDEX ON :Chunk(id)", qs[0].Text)
	require.Equal(t, 0, qs[0].Tx)
	require.True(t, qs[0].Committed)
	require.False(t, qs[0].Failed)
	require.Empty(t, qs[0].Params)
	require.Equal(t, qs, s.Committed())
	// Memgraph sends no bookmarks; the driver must cope with none.
	require.Empty(t, sess.LastBookmarks())

	s.Reset()
	require.Empty(t, s.Queries())
	require.Empty(t, s.Errors())
}

func TestExecuteWriteParams(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	sess := newSession(t, s)

	const dim = 1536
	const rows = 8 // 8 × 1536 floats × 9 bytes ≈ 110 KB: the RUN spans two chunks
	vec := func(r int) ([]float64, []any) {
		v := make([]float64, dim)
		want := make([]any, dim)
		for i := range v {
			v[i] = float64(r*dim+i)/7 - 100
			want[i] = v[i]
		}
		return v, want
	}
	var sent []map[string]any
	var want []any
	for r := range rows {
		v, wv := vec(r)
		sent = append(sent, map[string]any{
			"id":    fmt.Sprintf("doc-%d#Überschrift ✓ 日本語", r),
			"props": map[string]any{"n": r, "tags": []string{"a", "b"}, "nested": map[string]any{"ok": true, "nil": nil}},
			"vec":   v,
		})
		want = append(want, map[string]any{
			"id":    fmt.Sprintf("doc-%d#Überschrift ✓ 日本語", r),
			"props": map[string]any{"n": int64(r), "tags": []any{"a", "b"}, "nested": map[string]any{"ok": true, "nil": nil}},
			"vec":   wv,
		})
	}
	params := map[string]any{
		"rows":  sent,
		"min":   int64(math.MinInt64),
		"max":   int64(math.MaxInt64),
		"small": -17,
		"f":     math.SmallestNonzeroFloat64,
		"raw":   []byte{0, 1, 255},
		"empty": []any{},
	}
	const cypher = "UNWIND $rows AS row MERGE (c:Chunk {id: row.id}) SET c += row.props, c.embedding = row.vec"
	_, err := sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		res, err := tx.Run(ctx, cypher, params)
		if err != nil {
			return nil, err
		}
		return res.Consume(ctx)
	})
	require.NoError(t, err)

	qs := s.Queries()
	require.Len(t, qs, 1)
	q := qs[0]
	require.Equal(t, cypher, q.Text)
	require.Positive(t, q.Tx)
	require.True(t, q.Committed)
	require.Equal(t, map[string]any{
		"rows":  want,
		"min":   int64(math.MinInt64),
		"max":   int64(math.MaxInt64),
		"small": int64(-17),
		"f":     math.SmallestNonzeroFloat64,
		"raw":   []byte{0, 1, 255},
		"empty": []any{},
	}, q.Params)
	// ExecuteWrite opens a write transaction: BEGIN carries no "mode": "r".
	require.NotContains(t, q.Meta, "mode")
	require.Equal(t, qs, s.Committed())
	require.Empty(t, s.Errors())
}

func TestRespondRows(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	const many = 2500 // more than the driver's fetch size of 1000: PULL has_more paths
	s.Respond(func(q Query) ([]string, [][]any, bool) {
		switch {
		case q.Text == "SHOW INDEX INFO":
			return []string{"index type", "label", "property", "count"}, [][]any{
				{"label+property", "Chunk", []any{"id"}, 42},
				{"label", "Doc", nil, int64(7)},
			}, true
		case strings.HasPrefix(q.Text, "CALL vector_search.search"):
			out := make([][]any, many)
			for i := range out {
				out[i] = []any{map[string]any{"id": fmt.Sprint(i)}, float64(i) / 2}
			}
			return []string{"node", "similarity"}, out, true
		}
		return nil, nil, false
	})
	sess := newSession(t, s)

	res, err := sess.Run(ctx, "SHOW INDEX INFO", nil)
	require.NoError(t, err)
	recs, err := res.Collect(ctx)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, []string{"index type", "label", "property", "count"}, recs[0].Keys)
	require.Equal(t, []any{"label+property", "Chunk", []any{"id"}, int64(42)}, recs[0].Values)
	require.Equal(t, []any{"label", "Doc", nil, int64(7)}, recs[1].Values)

	// Inside a transaction, with two results open at once (qid handling).
	got, err := sess.ExecuteRead(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		a, err := tx.Run(ctx, "CALL vector_search.search('idx', 10, $v) YIELD node, similarity", map[string]any{"v": []float64{1, 2}})
		if err != nil {
			return nil, err
		}
		if !a.Next(ctx) {
			return nil, errors.New("no first row")
		}
		first := a.Record().Values
		b, err := tx.Run(ctx, "CALL vector_search.search('idx2', 10, $v) YIELD node, similarity", map[string]any{"v": []float64{3}})
		if err != nil {
			return nil, err
		}
		restB, err := b.Collect(ctx)
		if err != nil {
			return nil, err
		}
		restA, err := a.Collect(ctx)
		if err != nil {
			return nil, err
		}
		return []any{first, len(restA), len(restB), restA[len(restA)-1].Values}, nil
	})
	require.NoError(t, err)
	out := got.([]any)
	require.Equal(t, []any{map[string]any{"id": "0"}, 0.0}, out[0])
	require.Equal(t, many-1, out[1])
	require.Equal(t, many, out[2])
	require.Equal(t, []any{map[string]any{"id": fmt.Sprint(many - 1)}, float64(many-1) / 2}, out[3])

	qs := s.Queries()
	require.Len(t, qs, 3)
	require.Equal(t, "r", qs[1].Meta["mode"])
	require.Equal(t, qs[1].Tx, qs[2].Tx)
	require.Empty(t, s.Errors())
}

func TestTransientRetried(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	// The driver sleeps about 2 s (1 s doubled, ±20 %) before its first
	// retry and has no option to shorten it: keep this to one retry.
	s.FailNext(1, func(text string) bool { return strings.Contains(text, "MERGE") }, Conflict())
	sess := newSession(t, s)

	attempts := 0
	_, err := sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		attempts++
		res, err := tx.Run(ctx, "MERGE (n:Doc {id: $id})", map[string]any{"id": "a"})
		if err != nil {
			return nil, err
		}
		return res.Consume(ctx)
	})
	require.NoError(t, err)
	require.Equal(t, 2, attempts)

	qs := s.Queries()
	require.Len(t, qs, 2)
	require.True(t, qs[0].Failed)
	require.False(t, qs[0].Committed)
	require.False(t, qs[1].Failed)
	require.NotEqual(t, qs[0].Tx, qs[1].Tx)
	committed := s.Committed()
	require.Len(t, committed, 1)
	require.Equal(t, qs[1], committed[0])
	require.Empty(t, s.Errors())
}

func TestClientErrorNotRetried(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	const msg = "Index manipulation is not allowed in multicommand transactions."
	s.FailNext(1, func(text string) bool { return strings.HasPrefix(text, "CREATE INDEX") }, Failure{Code: CodeClient, Message: msg})
	sess := newSession(t, s)

	attempts := 0
	_, err := sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		attempts++
		res, err := tx.Run(ctx, "CREATE INDEX ON :Doc(id)", nil)
		if err != nil {
			return nil, err
		}
		return res.Consume(ctx)
	})
	var nerr *neo4j.Neo4jError
	require.ErrorAs(t, err, &nerr)
	require.Equal(t, CodeClient, nerr.Code)
	require.Equal(t, msg, nerr.Msg)
	require.False(t, neo4j.IsRetryable(err))
	require.Equal(t, 1, attempts)
	require.Empty(t, s.Committed())

	// The failed connection is reset and reused: the next write commits.
	_, err = sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		res, err := tx.Run(ctx, "CREATE (:Doc)", nil)
		if err != nil {
			return nil, err
		}
		return res.Consume(ctx)
	})
	require.NoError(t, err)
	require.Len(t, s.Committed(), 1)
	require.Equal(t, "CREATE (:Doc)", s.Committed()[0].Text)
	require.Equal(t, 1, s.Connections())
	require.Empty(t, s.Errors())
}

func TestDrop(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	d := newDriver(t, s, neo4j.NoAuth())
	sess := d.NewSession(ctx, neo4j.SessionConfig{})
	defer sess.Close(ctx)

	s.FailNext(1, nil, Failure{Drop: true})
	_, err := neo4j.ExecuteQuery(ctx, d, "RETURN 1", nil, neo4j.EagerResultTransformer,
		neo4j.ExecuteQueryWithoutBookmarkManager())
	// ExecuteQuery is a transaction function: a dead connection is retried
	// at once (no sleep) on a fresh connection, and then succeeds.
	require.NoError(t, err)
	qs := s.Queries()
	require.Len(t, qs, 2)
	require.True(t, qs[0].Failed)
	require.True(t, qs[1].Committed)
	require.Equal(t, 2, s.Connections())

	// session.Run is not retried: the caller sees a connectivity error.
	s.FailNext(1, nil, Failure{Drop: true})
	res, err := sess.Run(ctx, "CREATE (:Doc)", nil)
	if err == nil {
		_, err = res.Consume(ctx)
	}
	require.Error(t, err)
	require.True(t, neo4j.IsConnectivityError(err), "%T: %v", err, err)
	require.Len(t, s.Committed(), 1)
	require.Empty(t, s.Errors())
}

func TestRollbackAndExplicitTx(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	sess := newSession(t, s)

	tx, err := sess.BeginTransaction(ctx, neo4j.WithTxTimeout(3*time.Second), neo4j.WithTxMetadata(map[string]any{"run": "r1"}))
	require.NoError(t, err)
	_, err = tx.Run(ctx, "CREATE (:Gone)", nil)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))

	tx, err = sess.BeginTransaction(ctx)
	require.NoError(t, err)
	for _, q := range []string{"CREATE (:A)", "CREATE (:B)"} {
		res, err := tx.Run(ctx, q, nil)
		require.NoError(t, err)
		_, err = res.Consume(ctx)
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit(ctx))

	qs := s.Queries()
	require.Len(t, qs, 3)
	require.False(t, qs[0].Committed)
	require.Equal(t, int64(3000), qs[0].Meta["tx_timeout"])
	require.Equal(t, map[string]any{"run": "r1"}, qs[0].Meta["tx_metadata"])
	require.NotEqual(t, qs[0].Tx, qs[1].Tx)
	require.Equal(t, qs[1].Tx, qs[2].Tx)
	var texts []string
	for _, q := range s.Committed() {
		texts = append(texts, q.Text)
	}
	require.Equal(t, []string{"CREATE (:A)", "CREATE (:B)"}, texts)
	require.Empty(t, s.Errors())
}

func TestCommitFailureNoRetryTime(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	s.FailNext(1, func(text string) bool { return text == "CREATE (:X)" }, Failure{
		Code: CodeTransient, Message: "Unable to commit", OnCommit: true,
	})
	// MaxTransactionRetryTime 0 turns the driver's retries off: fast.
	sess := newSession(t, s, func(c *config.Config) { c.MaxTransactionRetryTime = 0 })

	start := time.Now()
	_, err := sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		res, err := tx.Run(ctx, "CREATE (:X)", nil)
		if err != nil {
			return nil, err
		}
		return res.Consume(ctx)
	})
	require.Error(t, err)
	require.True(t, neo4j.IsTransactionExecutionLimit(err), "%T: %v", err, err)
	require.ErrorContains(t, err, "Unable to commit")
	require.Less(t, time.Since(start), time.Second)

	qs := s.Queries()
	require.Len(t, qs, 1)
	require.True(t, qs[0].Failed)
	require.False(t, qs[0].Committed)
	require.Empty(t, s.Committed())
	require.Empty(t, s.Errors())
}

func TestAutoCommitFailsAtEnd(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	s.FailNext(1, nil, Failure{Code: CodeClient, Message: "Unable to commit due to unique constraint violation on :Doc(id)", OnCommit: true})
	sess := newSession(t, s)

	res, err := sess.Run(ctx, "CREATE (:Doc {id: 1})", nil)
	require.NoError(t, err) // RUN succeeded; the auto-commit fails at the end of PULL
	_, err = res.Consume(ctx)
	require.ErrorContains(t, err, "unique constraint violation")
	qs := s.Queries()
	require.Len(t, qs, 1)
	require.True(t, qs[0].Failed)
	require.Empty(t, s.Committed())
	require.Empty(t, s.Errors())
}

func TestStructParams(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	sess := newSession(t, s)

	when := time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC)
	res, err := sess.Run(ctx, "CREATE (:P {loc: $p, at: $t})", map[string]any{
		"p": neo4j.Point2D{X: 1.5, Y: -2, SpatialRefId: 7203},
		"t": when,
	})
	require.NoError(t, err)
	_, err = res.Consume(ctx)
	require.NoError(t, err)
	p := s.Queries()[0].Params
	// Bolt 5 Point2D is struct 'X' {srid, x, y}; a UTC time.Time is sent as
	// DateTimeZoneId 'i' {seconds, nanoseconds, zone id} (Bolt 5 structure
	// semantics, bolt/structure-semantics).
	require.Equal(t, Struct{Tag: 'X', Fields: []any{int64(7203), 1.5, -2.0}}, p["p"])
	require.Equal(t, Struct{Tag: 'i', Fields: []any{when.Unix(), int64(10), "UTC"}}, p["t"])
}

func TestConcurrentSessions(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	d := newDriver(t, s, neo4j.NoAuth())
	// Driver quirk: v5.28's connector.Connect lazily sets a field on first
	// use without a lock, a data race when the first connections are opened
	// concurrently. Opening one connection first avoids it.
	require.NoError(t, d.VerifyConnectivity(ctx))
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			sess := d.NewSession(ctx, neo4j.SessionConfig{})
			defer sess.Close(ctx)
			_, err := sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
				res, err := tx.Run(ctx, "CREATE (:W {w: $w})", map[string]any{"w": w})
				if err != nil {
					return nil, err
				}
				return res.Consume(ctx)
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[int64]bool{}
	txs := map[int]bool{}
	for _, q := range s.Committed() {
		seen[q.Params["w"].(int64)] = true
		txs[q.Tx] = true
	}
	require.Len(t, seen, workers)
	require.Len(t, txs, workers)
	require.Empty(t, s.Errors())
}

// rawClient speaks Bolt by hand to check the server state machine
// independently of the driver.
type rawClient struct {
	t *testing.T
	c net.Conn
}

func dialRaw(t *testing.T, s *Server, proposals [4]uint32) (*rawClient, uint32) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.URI(), "bolt://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	hs := binary.BigEndian.AppendUint32(nil, 0x6060B017)
	for _, p := range proposals {
		hs = binary.BigEndian.AppendUint32(hs, p)
	}
	_, err = c.Write(hs)
	require.NoError(t, err)
	var v [4]byte
	_, err = io.ReadFull(c, v[:])
	require.NoError(t, err)
	return &rawClient{t: t, c: c}, binary.BigEndian.Uint32(v[:])
}

// send writes one message, split into chunks of chunk bytes.
func (r *rawClient) send(chunk int, tag byte, fields ...any) {
	var e encoder
	e.structHeader(tag, len(fields))
	for _, f := range fields {
		require.NoError(r.t, e.value(f))
	}
	var out []byte
	for b := e.buf; len(b) > 0; {
		n := min(len(b), chunk)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
		out = append(out, b[:n]...)
		b = b[n:]
	}
	out = append(out, 0, 0)
	_, err := r.c.Write(out)
	require.NoError(r.t, err)
}

// recv reads one message and returns its tag and fields.
func (r *rawClient) recv() (byte, []any) {
	var msg []byte
	var hdr [2]byte
	for {
		_, err := io.ReadFull(r.c, hdr[:])
		require.NoError(r.t, err)
		n := int(binary.BigEndian.Uint16(hdr[:]))
		if n == 0 {
			break
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r.c, b)
		require.NoError(r.t, err)
		msg = append(msg, b...)
	}
	d := decoder{buf: msg}
	n, tag, err := d.header()
	require.NoError(r.t, err)
	fields := make([]any, n)
	for i := range fields {
		fields[i], err = d.value(0)
		require.NoError(r.t, err)
	}
	return tag, fields
}

func TestHandshakeVersions(t *testing.T) {
	s := Start(t)
	for _, tc := range []struct {
		name  string
		props [4]uint32
		want  uint32
	}{
		{"exact 5.2", [4]uint32{0x00000205, 0, 0, 0}, 0x00000205},
		{"range 5.4..5.1", [4]uint32{0x00030405, 0, 0, 0}, 0x00000205},
		{"manifest then 5.8..5.0", [4]uint32{0x000001FF, 0x00080805, 0, 0}, 0x00000205},
		{"5.4..5.3 only", [4]uint32{0x00010405, 0x00000404, 0, 0}, 0},
		{"5.1..5.0 and 4.4", [4]uint32{0x00010105, 0x00000404, 0, 0}, 0},
	} {
		_, got := dialRaw(t, s, tc.props)
		require.Equal(t, tc.want, got, tc.name)
	}
}

func TestFailedStateIgnoresUntilReset(t *testing.T) {
	s := Start(t)
	s.FailNext(1, func(text string) bool { return text == "BAD" }, Failure{Code: CodeClient, Message: "syntax"})
	r, v := dialRaw(t, s, [4]uint32{0x00000205, 0, 0, 0})
	require.Equal(t, uint32(0x00000205), v)

	r.send(4, msgHello, map[string]any{"user_agent": "raw/1"}) // 4-byte chunks
	tag, f := r.recv()
	require.Equal(t, byte(msgSuccess), tag)
	require.Equal(t, ServerAgent, f[0].(map[string]any)["server"])
	require.Equal(t, "bolt-1", f[0].(map[string]any)["connection_id"])

	r.send(0xFFFF, msgRun, "RETURN 1", map[string]any{}, map[string]any{})
	tag, f = r.recv()
	require.Equal(t, byte(msgFailure), tag) // before LOGON
	require.Equal(t, codeInvalid, f[0].(map[string]any)["code"])
	r.send(0xFFFF, msgReset)
	tag, _ = r.recv()
	require.Equal(t, byte(msgSuccess), tag)
	require.Len(t, s.Errors(), 1)

	r.send(0xFFFF, msgLogon, map[string]any{"scheme": "none"})
	tag, _ = r.recv()
	require.Equal(t, byte(msgSuccess), tag)

	r.send(0xFFFF, msgRun, "BAD", map[string]any{}, map[string]any{})
	r.send(0xFFFF, msgPull, map[string]any{"n": int64(-1)})
	tag, f = r.recv()
	require.Equal(t, byte(msgFailure), tag)
	require.Equal(t, map[string]any{"code": CodeClient, "message": "syntax"}, f[0])
	tag, _ = r.recv()
	require.Equal(t, byte(msgIgnored), tag)
	r.send(0xFFFF, msgBegin, map[string]any{})
	tag, _ = r.recv()
	require.Equal(t, byte(msgIgnored), tag)

	r.send(0xFFFF, msgReset)
	tag, _ = r.recv()
	require.Equal(t, byte(msgSuccess), tag)

	r.send(0xFFFF, msgRun, "CREATE ()", map[string]any{"k": "v"}, map[string]any{})
	r.send(0xFFFF, msgDiscard, map[string]any{"n": int64(-1)})
	tag, f = r.recv()
	require.Equal(t, byte(msgSuccess), tag)
	require.Equal(t, []any{}, f[0].(map[string]any)["fields"])
	tag, f = r.recv()
	require.Equal(t, byte(msgSuccess), tag)
	require.Equal(t, "w", f[0].(map[string]any)["type"])
	require.NotContains(t, f[0].(map[string]any), "has_more")

	// PULL n=2 of 3 rows: two RECORDs and has_more, then the rest.
	s.Respond(func(q Query) ([]string, [][]any, bool) {
		return []string{"x"}, [][]any{{1}, {2}, {3}}, q.Text == "UNWIND [1,2,3] AS x RETURN x"
	})
	r.send(0xFFFF, msgRun, "UNWIND [1,2,3] AS x RETURN x", map[string]any{}, map[string]any{})
	r.send(0xFFFF, msgPull, map[string]any{"n": int64(2)})
	tag, f = r.recv()
	require.Equal(t, byte(msgSuccess), tag)
	require.Equal(t, []any{"x"}, f[0].(map[string]any)["fields"])
	for _, want := range []int64{1, 2} {
		tag, f = r.recv()
		require.Equal(t, byte(msgRecord), tag)
		require.Equal(t, []any{want}, f[0])
	}
	tag, f = r.recv()
	require.Equal(t, byte(msgSuccess), tag)
	require.Equal(t, map[string]any{"has_more": true}, f[0])
	require.False(t, s.Queries()[2].Committed) // not pulled to the end yet
	r.send(0xFFFF, msgPull, map[string]any{"n": int64(2)})
	tag, f = r.recv()
	require.Equal(t, byte(msgRecord), tag)
	require.Equal(t, []any{int64(3)}, f[0])
	tag, f = r.recv()
	require.Equal(t, byte(msgSuccess), tag)
	require.Equal(t, "r", f[0].(map[string]any)["type"])
	require.True(t, s.Queries()[2].Committed)

	r.send(0xFFFF, msgGoodbye)
	_, err := r.c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)

	qs := s.Queries()
	require.Len(t, qs, 3) // the RUN before LOGON was refused, not recorded
	require.True(t, qs[0].Failed)
	require.Equal(t, "CREATE ()", qs[1].Text)
	require.True(t, qs[1].Committed)
	require.Equal(t, map[string]any{"k": "v"}, qs[1].Params)
}

// TestDelay: a delayed query answers after its delay; the handlers still
// answer every query.
func TestDelay(t *testing.T) {
	ctx := testCtx(t)
	s := Start(t)
	s.EmulateSchema()
	const d = 150 * time.Millisecond
	s.Delay(func(q Query) time.Duration {
		if strings.HasPrefix(q.Text, "UNWIND") {
			return d
		}
		return 0
	})
	sess := newSession(t, s)
	res, err := sess.Run(ctx, "SHOW VERSION", nil)
	require.NoError(t, err)
	rec, err := res.Single(ctx)
	require.NoError(t, err)
	require.Equal(t, "3.12.0", rec.Values[0], "the schema emulation still answers")
	start := time.Now()
	_, err = sess.Run(ctx, "UNWIND [1] AS x RETURN x", nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), d)
}

// TestAnswerTypeAndReadAccess: the summary carries the answer's query
// type, and a writing plan fails in a read transaction as Memgraph's
// AccessorCompliance fails it, while it runs in a write one.
func TestAnswerTypeAndReadAccess(t *testing.T) {
	s := Start(t)
	s.Answer(func(q Query) (Answer, bool) {
		switch q.Text {
		case "RETURN 1":
			return Answer{Fields: []string{"1"}, Rows: [][]any{{int64(1)}}, Type: "rw"}, true
		case "CREATE (n)":
			return Answer{Writes: true}, true
		}
		return Answer{}, false
	})
	ctx := testCtx(t)
	d := newDriver(t, s, neo4j.NoAuth())
	read := d.NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeRead})
	defer read.Close(ctx)
	tx, err := read.BeginTransaction(ctx)
	require.NoError(t, err)
	res, err := tx.Run(ctx, "RETURN 1", nil)
	require.NoError(t, err)
	sum, err := res.Consume(ctx)
	require.NoError(t, err)
	require.Equal(t, neo4j.StatementTypeReadWrite, sum.StatementType())
	_, err = tx.Run(ctx, "CREATE (n)", nil)
	require.ErrorContains(t, err, "Accessor type READ and query type RW are misaligned!")
	_ = tx.Rollback(ctx)

	write := d.NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeWrite})
	defer write.Close(ctx)
	tx, err = write.BeginTransaction(ctx)
	require.NoError(t, err)
	res, err = tx.Run(ctx, "CREATE (n)", nil)
	require.NoError(t, err)
	sum, err = res.Consume(ctx)
	require.NoError(t, err)
	require.Equal(t, neo4j.StatementTypeReadWrite, sum.StatementType())
	require.NoError(t, tx.Commit(ctx))
}

// TestShowVectorIndexInfoNeeds31: Memgraph 3.0's grammar has no SHOW
// VECTOR INDEX INFO (Cypher.g4 gains vectorIndexInfo in v3.1.0), so the
// emulated 3.0 refuses it; 3.1 lists the indexes.
func TestShowVectorIndexInfoNeeds31(t *testing.T) {
	for _, v := range []string{"3.0.0", "3.1.0"} {
		ctx := testCtx(t)
		s := Start(t)
		s.EmulateMemgraph(Memgraph{Version: v})
		res, err := newSession(t, s).Run(ctx, "SHOW VECTOR INDEX INFO", nil)
		if err == nil {
			_, err = res.Consume(ctx)
		}
		if v == "3.0.0" {
			require.ErrorContains(t, err, "parsing error", v)
			continue
		}
		require.NoError(t, err, v)
	}
}

// TestVectorIndexNotificationTitles: CREATE VECTOR INDEX's notification
// titles name the label and property before 3.11 and the index from 3.11
// (Memgraph src/query/interpreter.cpp v3.10.0:4680, v3.11.0:4708, :4725).
func TestVectorIndexNotificationTitles(t *testing.T) {
	const create = "CREATE VECTOR INDEX `chunk_embedding` ON :`Chunk`(`embedding`) WITH CONFIG {\"dimension\": 3, \"capacity\": 10}"
	for v, want := range map[string][2]string{
		"3.10.0": {"Created vector index on label Chunk, property embedding.",
			"Error while creating vector index on label Chunk, property embedding, for more information check the logs."},
		"3.11.0": {"Created vector index chunk_embedding.",
			"Error while creating vector index chunk_embedding, for more information check the logs."},
	} {
		ctx := testCtx(t)
		s := Start(t)
		s.EmulateMemgraph(Memgraph{Version: v})
		sess := newSession(t, s)
		for i := range 2 {
			res, err := sess.Run(ctx, create, nil)
			require.NoError(t, err, v)
			sum, err := res.Consume(ctx)
			require.NoError(t, err, v)
			require.Len(t, sum.Notifications(), 1, v)
			require.Equal(t, want[i], sum.Notifications()[0].Title(), v)
		}
	}
}

// TestShowIndexInfoListsVectorIndexes: SHOW INDEX INFO has a row per
// vector index, its property a string: of type "vector" on 3.0–3.3,
// "label+property_vector" from 3.4, its label ":L" from 3.11 (Memgraph
// src/query/interpreter.cpp v3.0.0:4454 and :4489, v3.4.0:4963 and :5007,
// v3.12.0:7071).
func TestShowIndexInfoListsVectorIndexes(t *testing.T) {
	for v, want := range map[string][][]any{
		"3.0.0":  {{"vector", "Chunk", "embedding", int64(0)}},
		"3.3.0":  {{"vector", "Chunk", "embedding", int64(0)}},
		"3.4.0":  {{"label+property_vector", "Chunk", "embedding", int64(0)}},
		"3.11.0": {{"label+property_vector", ":Chunk", "embedding", int64(0)}},
	} {
		ctx := testCtx(t)
		s := Start(t)
		s.EmulateMemgraph(Memgraph{Version: v}).AddVectorIndex("chunk_embedding", "Chunk", "embedding", 3)
		res, err := newSession(t, s).Run(ctx, "SHOW INDEX INFO", nil)
		require.NoError(t, err, v)
		recs, err := res.Collect(ctx)
		require.NoError(t, err, v)
		var got [][]any
		for _, r := range recs {
			got = append(got, r.Values)
		}
		require.Equal(t, want, got, v)
	}
}

// TestIndexDropRefusedInExplicitTx: Memgraph refuses every index query in
// an explicit transaction, DROPs as well as CREATEs (interpreter.cpp
// v3.8.0:3810, :4142, :4310 throw IndexInMulticommandTxException).
func TestIndexDropRefusedInExplicitTx(t *testing.T) {
	for _, q := range []string{"DROP INDEX ON :`Chunk`(`id`)", "DROP TEXT INDEX `chunk_lex`", "DROP VECTOR INDEX `chunk_embedding`"} {
		ctx := testCtx(t)
		s := Start(t)
		s.EmulateSchema()
		tx, err := newSession(t, s).BeginTransaction(ctx)
		require.NoError(t, err)
		res, err := tx.Run(ctx, q, nil)
		if err == nil {
			_, err = res.Consume(ctx)
		}
		require.ErrorContains(t, err, "Index manipulation is not allowed in multicommand transactions.", q)
		_ = tx.Rollback(ctx)
	}
}

// TestShowIndexInfoTextMark: SHOW INDEX INFO lists a text index as "text
// (name: N)" on 3.5 and as "label_text (name: N)" from 3.6 (Memgraph
// src/query/interpreter.cpp v3.5.0:5195, v3.6.0:5344).
func TestShowIndexInfoTextMark(t *testing.T) {
	for v, want := range map[string]string{"3.5.0": "text (name: chunk_lex)", "3.6.0": "label_text (name: chunk_lex)"} {
		ctx := testCtx(t)
		s := Start(t)
		s.EmulateMemgraph(Memgraph{Version: v, TextSearchFlag: true})
		sess := newSession(t, s)
		res, err := sess.Run(ctx, "CREATE TEXT INDEX `chunk_lex` ON :`Chunk`(`lex`)", nil)
		require.NoError(t, err, v)
		_, err = res.Consume(ctx)
		require.NoError(t, err, v)
		res, err = sess.Run(ctx, "SHOW INDEX INFO", nil)
		require.NoError(t, err, v)
		recs, err := res.Collect(ctx)
		require.NoError(t, err, v)
		require.Len(t, recs, 1, v)
		require.Equal(t, want, recs[0].Values[0], v)
	}
}

// TestEmulatedReadAccessByVersion: a write in a transaction begun with
// mode "r" runs on Memgraph 3.0 and 3.1, which ignore the mode, and fails
// from 3.2 (src/glue/SessionHL.cpp v3.2.0:53, src/query/interpreter.cpp
// v3.2.0:2328 AccessorCompliance); a read runs on every version.
func TestEmulatedReadAccessByVersion(t *testing.T) {
	const write = "UNWIND $rows AS row MERGE (n:`Doc` {id: row.id}) SET n += row.props"
	for v, refused := range map[string]bool{"3.0.0": false, "3.1.1": false, "3.2.0": true, "3.12.0": true} {
		ctx := testCtx(t)
		s := Start(t)
		s.EmulateMemgraph(Memgraph{Version: v})
		read := newDriver(t, s, neo4j.NoAuth()).NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeRead})
		tx, err := read.BeginTransaction(ctx)
		require.NoError(t, err, v)
		res, err := tx.Run(ctx, "MATCH (n:`Doc`) RETURN n.`id`", nil)
		require.NoError(t, err, v)
		_, err = res.Consume(ctx)
		require.NoError(t, err, v)
		res, err = tx.Run(ctx, write, map[string]any{"rows": []any{}})
		if err == nil {
			_, err = res.Consume(ctx)
		}
		if refused {
			require.ErrorContains(t, err, "Accessor type READ and query type RW are misaligned!", v)
			_ = tx.Rollback(ctx)
		} else {
			require.NoError(t, err, v)
			require.NoError(t, tx.Commit(ctx), v)
		}
		require.NoError(t, read.Close(ctx))
	}
}

// TestEmulatedReadAccessAutoCommit: a write sent as one auto-commit query
// of a read session (RUN with mode "r" in its extra) runs on every
// version. Memgraph reads the mode of a RUN's extra as of a BEGIN's
// (src/glue/SessionHL.cpp v3.2.0:53 ToQueryExtras, :300 Prepare), but
// only the BEGIN handler turns it into a READ accessor
// (src/query/interpreter.cpp v3.2.0:2389–2390, v3.12.0:3448–3449); a
// query outside a transaction gets its accessor from its own plan
// (parsed_query.is_cypher_read: interpreter.cpp v3.2.0:6054–6070,
// v3.12.0:9947–9948 and :9793–9802 cypher_access_type), so
// AccessorCompliance (v3.2.0:2328) finds a WRITE accessor.
func TestEmulatedReadAccessAutoCommit(t *testing.T) {
	const write = "UNWIND $rows AS row MERGE (n:`Doc` {id: row.id}) SET n += row.props"
	for _, v := range []string{"3.1.1", "3.2.0", "3.12.0"} {
		ctx := testCtx(t)
		s := Start(t)
		s.EmulateMemgraph(Memgraph{Version: v})
		read := newDriver(t, s, neo4j.NoAuth()).NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeRead})
		res, err := read.Run(ctx, write, map[string]any{"rows": []any{}})
		require.NoError(t, err, v)
		_, err = res.Consume(ctx)
		require.NoError(t, err, v)
		require.NoError(t, read.Close(ctx))
		qs := s.Queries()
		require.Len(t, qs, 1, v)
		require.Zero(t, qs[0].Tx, v)
		require.Equal(t, "r", qs[0].Meta["mode"], v)
		require.True(t, qs[0].Committed, v)
		require.False(t, qs[0].Failed, v)
	}
	// The same for an Answer that marks the plan as writing.
	s := Start(t)
	s.Answer(func(q Query) (Answer, bool) { return Answer{Writes: true}, true })
	ctx := testCtx(t)
	read := newDriver(t, s, neo4j.NoAuth()).NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeRead})
	defer read.Close(ctx)
	res, err := read.Run(ctx, "CREATE (n)", nil)
	require.NoError(t, err)
	sum, err := res.Consume(ctx)
	require.NoError(t, err)
	require.Equal(t, neo4j.StatementTypeReadWrite, sum.StatementType())
}

// TestMulticommandMessagesByVersion: SHOW and index DDL in an explicit
// transaction fail with 3.0's own messages and, from 3.1, with
// MulticommandTxException's (src/query/exceptions.hpp v3.0.0:108, :140,
// :430; v3.1.0:113, :142, :169, :440).
func TestMulticommandMessagesByVersion(t *testing.T) {
	for _, tc := range []struct{ v, q, want string }{
		{"3.0.0", "CREATE INDEX ON :`Doc`(`id`)", "Index manipulation not allowed in multicommand transactions."},
		{"3.0.0", "SHOW INDEX INFO", "Info reporting not allowed in multicommand transactions."},
		{"3.0.0", "SHOW VERSION", "Version info query not allowed in multicommand transactions."},
		{"3.1.0", "CREATE INDEX ON :`Doc`(`id`)", "Index manipulation is not allowed in multicommand transactions."},
		{"3.12.0", "SHOW INDEX INFO", "Storage information query is not allowed in multicommand transactions."},
		{"3.12.0", "SHOW VERSION", "Version information query is not allowed in multicommand transactions."},
	} {
		ctx := testCtx(t)
		s := Start(t)
		s.EmulateMemgraph(Memgraph{Version: tc.v})
		tx, err := newSession(t, s).BeginTransaction(ctx)
		require.NoError(t, err)
		res, err := tx.Run(ctx, tc.q, nil)
		if err == nil {
			_, err = res.Consume(ctx)
		}
		require.ErrorContains(t, err, tc.want, tc.v+" "+tc.q)
		_ = tx.Rollback(ctx)
	}
}
