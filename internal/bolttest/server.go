// Package bolttest runs a small Bolt 5.2 server on 127.0.0.1 for tests of
// code that talks to Memgraph through github.com/neo4j/neo4j-go-driver/v5.
//
// The server answers like a Memgraph instance with authentication disabled.
// It negotiates only Bolt 5.2, the version Memgraph speaks to the v5 driver
// (Memgraph facts sheet, memgraph.md §1). It executes nothing: it records
// every RUN with its decoded parameters, whether it ran in an explicit
// transaction and whether that work was committed, answers row-returning
// queries from a handler (Respond), and injects failures or dropped
// connections (FailNext).
//
// Wire formats follow the public Bolt documentation
// (neo4j-drivers.github.io: bolt/handshake, bolt/message, bolt/server-state,
// packstream/) and what neo4j-go-driver v5.28 sends (neo4j/internal/bolt).
package bolttest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// ServerAgent is the "server" value sent in the HELLO SUCCESS, Memgraph's
// default --bolt-server-name-for-init (memgraph.md §1).
const ServerAgent = "Neo4j/v5.11.0 compatible graph database server - Memgraph"

// Error codes Memgraph uses (memgraph.md §1 and §2).
const (
	// CodeTransient is Memgraph's code for retryable errors such as
	// write-write conflicts; the driver retries TransientError codes.
	CodeTransient = "Memgraph.TransientError.MemgraphError.MemgraphError"
	// CodeClient is Memgraph's code for query errors that must not be retried.
	CodeClient = "Memgraph.ClientError.MemgraphError.MemgraphError"
	// CodeUnauthenticated is sent to a LOGON with wrong credentials.
	CodeUnauthenticated = "Memgraph.ClientError.Security.Unauthenticated"
	// codeInvalid answers a message that is not valid in the current state.
	codeInvalid = "Memgraph.ClientError.Request.Invalid"
)

// Bolt message tags (bolt/message specification).
const (
	msgHello     = 0x01
	msgGoodbye   = 0x02
	msgReset     = 0x0F
	msgRun       = 0x10
	msgBegin     = 0x11
	msgCommit    = 0x12
	msgRollback  = 0x13
	msgDiscard   = 0x2F
	msgPull      = 0x3F
	msgTelemetry = 0x54
	msgRoute     = 0x66
	msgLogon     = 0x6A
	msgLogoff    = 0x6B
	msgSuccess   = 0x70
	msgRecord    = 0x71
	msgIgnored   = 0x7E
	msgFailure   = 0x7F
)

// maxMessage bounds one dechunked client message (bytes).
const maxMessage = 256 << 20

// Query is one RUN message.
type Query struct {
	// Text is the Cypher text as sent.
	Text string
	// Params is the decoded parameter map. Values are nil, bool, int64,
	// float64, string, []byte, []any, map[string]any or Struct.
	Params map[string]any
	// Meta is the extra map of the RUN for auto-commit queries, or of the
	// BEGIN for queries in an explicit transaction (keys such as "mode",
	// "tx_timeout", "tx_metadata", "db").
	Meta map[string]any
	// Tx is the id (1, 2, …, per server) of the explicit transaction
	// (BEGIN … COMMIT/ROLLBACK) the query ran in, 0 for auto-commit
	// (session.Run).
	Tx int
	// Committed reports that the query's effects count: its transaction was
	// committed, or (auto-commit) its result was pulled or discarded to the
	// end without failure.
	Committed bool
	// Failed reports that the server answered FAILURE to the query (on RUN,
	// PULL, or, with Failure.OnCommit, on the COMMIT of its transaction) or
	// dropped the connection on it.
	Failed bool
	// Conn is the connection id ("bolt-1", "bolt-2", …) the query came on.
	Conn string
}

// Failure is an injected error answer.
type Failure struct {
	// Code is the FAILURE code; empty means CodeTransient.
	Code string
	// Message is the FAILURE message; empty means "injected failure".
	Message string
	// Drop closes the TCP connection instead of answering.
	Drop bool
	// OnCommit fails the COMMIT of the transaction containing the matching
	// query instead of the RUN (for an auto-commit query: the end of its
	// PULL, where Memgraph commits it).
	OnCommit bool
	// OnPull answers SUCCESS to the RUN and fails the PULL (or DISCARD),
	// which is where in-memory Memgraph reports write conflicts
	// (memgraph.md §2).
	OnPull bool
}

// Conflict returns Memgraph's write-write conflict error, reported on the
// PULL of the conflicting statement (memgraph.md §2).
func Conflict() Failure {
	return Failure{
		Code:    CodeTransient,
		Message: "Cannot resolve conflicting transactions. Retry this transaction when the conflicting transaction is finished.",
		OnPull:  true,
	}
}

type failRule struct {
	left  int
	match func(string) bool
	f     Failure
}

// Server is a Bolt 5.2 server on 127.0.0.1 for tests. It records every
// query with its parameters and can inject failures. All methods are safe
// for concurrent use; each connection is served by its own goroutine.
type Server struct {
	ln net.Listener
	wg sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	conns     map[net.Conn]struct{}
	queries   []*Query
	rules     []*failRule
	respond   func(Query) (Answer, bool)
	delay     func(Query) time.Duration
	user      string
	password  string
	checkAuth bool
	logons    []map[string]any
	proposals [][4]uint32
	errs      []error
	nextConn  int
	nextTx    int
}

// Start listens on 127.0.0.1:0 and serves until Close, which t.Cleanup
// calls. It fails t if it cannot listen.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("bolttest: listen: %v", err)
	}
	s := &Server{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// URI returns "bolt://127.0.0.1:PORT".
func (s *Server) URI() string {
	return "bolt://" + s.ln.Addr().String()
}

// Close stops listening, closes every open connection and waits for their
// goroutines. It is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	_ = s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Queries returns all recorded RUNs in arrival order (a copy). RUNs the
// server IGNORED (sent while the connection was FAILED) are not recorded.
func (s *Server) Queries() []Query {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Query, len(s.queries))
	for i, q := range s.queries {
		out[i] = *q
	}
	return out
}

// Committed returns the queries whose effects count, in arrival order:
// auto-commit successes and the queries of committed transactions.
func (s *Server) Committed() []Query {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Query
	for _, q := range s.queries {
		if q.Committed {
			out = append(out, *q)
		}
	}
	return out
}

// Reset forgets recorded queries (not failure rules or handlers).
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = nil
}

// FailNext makes the next n queries whose text satisfies match fail with f
// (n >= 1; match nil matches every query). Rules are tried in the order they
// were added; a query consumes at most one rule.
func (s *Server) FailNext(n int, match func(text string) bool, f Failure) {
	if n < 1 {
		panic(fmt.Sprintf("bolttest: FailNext n=%d, want >= 1", n))
	}
	if match == nil {
		match = func(string) bool { return true }
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &failRule{left: n, match: match, f: f})
}

// Respond sets a handler for queries that return rows (for example
// "SHOW INDEX INFO", "SHOW VECTOR INDEX INFO", "CALL vector_search.search").
// It returns the column names and rows (values as Go values: nil, bool,
// integers, floats, string, []byte, slices, maps with string keys, Struct);
// ok=false means the default answer (no fields, no rows). The handler runs on
// connection goroutines, possibly concurrently. nil removes the handler.
func (s *Server) Respond(h func(q Query) (fields []string, rows [][]any, ok bool)) {
	if h == nil {
		s.Answer(nil)
		return
	}
	s.Answer(func(q Query) (Answer, bool) {
		fields, rows, ok := h(q)
		return Answer{Fields: fields, Rows: rows}, ok
	})
}

// Answer is a handler's full answer to a query.
type Answer struct {
	// Fields and Rows are the result, as for Respond.
	Fields []string
	Rows   [][]any
	// Notifications go into the summary (the SUCCESS that ends the PULL),
	// as Memgraph sends them: maps with "severity" ("INFO", "WARNING"),
	// "code" (e.g. "IndexAlreadyExists"), "title" and "description"
	// (Memgraph src/query/metadata.cpp; Notification).
	Notifications []Notification
	// Fail, when set, fails the query instead (as FailNext would), for
	// answers that depend on state, like a duplicate index.
	Fail *Failure
	// Type is the query type of the summary ("r", "w", "rw", "s"); empty
	// means "r" for an answer with fields, else "w". Memgraph computes it
	// from the plan: "rw" for a plan with a write, and also for one that
	// reads nothing from the graph (RETURN 1, UNWIND $list … RETURN) and
	// for every EXPLAIN (src/query/plan/read_write_type_checker.cpp
	// TypeToString; memgraph/memgraph#2777).
	Type string
	// Writes reports that the query's plan writes (Memgraph's plan type W
	// or RW; Type then defaults to "rw"). In an explicit transaction begun
	// with mode "r" the query fails as Memgraph 3.2+ fails it
	// (AccessorCompliance in src/query/interpreter.cpp: "Accessor type
	// READ and query type RW are misaligned!"), reported on the RUN; an
	// auto-commit query runs with any mode (only BEGIN reads it into the
	// accessor: interpreter.cpp v3.2.0:2390).
	Writes bool
}

// Notification is one summary notification.
type Notification struct {
	Severity, Code, Title, Description string
}

// Answer sets a handler like Respond that can also attach notifications or
// fail the query; ok=false means the default answer. nil removes it.
func (s *Server) Answer(h func(q Query) (Answer, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = h
}

// Delay makes the server wait d(q) before it answers each RUN of query q,
// as a Memgraph does while it executes it; the handlers (Respond, Answer,
// EmulateSchema) still answer. nil removes it.
func (s *Server) Delay(d func(q Query) time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// RequireAuth makes LOGON accept only basic auth with these credentials and
// answer anything else with a FAILURE coded CodeUnauthenticated. By default
// every LOGON succeeds, as on a Memgraph without users.
func (s *Server) RequireAuth(user, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user, s.password, s.checkAuth = user, password, true
}

// Logons returns the auth maps of all LOGON messages received (keys
// "scheme", "principal", "credentials"), in order.
func (s *Server) Logons() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.logons...)
}

// Connections returns how many TCP connections the server has accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextConn
}

// Errors returns protocol errors the server saw (malformed chunks or
// PackStream, messages invalid in their state); tests can require none.
func (s *Server) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

func (s *Server) addErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.nextConn++
		id := fmt.Sprintf("bolt-%d", s.nextConn)
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c := &conn{s: s, nc: nc, id: id, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriterSize(nc, 64<<10)}
			if err := c.serve(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.addErr(fmt.Errorf("%s: %w", id, err))
			}
			_ = nc.Close()
			s.mu.Lock()
			delete(s.conns, nc)
			s.mu.Unlock()
		}()
	}
}

// match consumes the first rule matching text, if any.
func (s *Server) match(text string) (Failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.rules {
		if r.left > 0 && r.match(text) {
			r.left--
			if r.left == 0 {
				s.rules = append(s.rules[:i:i], s.rules[i+1:]...)
			}
			return r.f, true
		}
	}
	return Failure{}, false
}

func (s *Server) record(q *Query) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, q)
}

func (s *Server) setCommitted(qs ...*Query) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range qs {
		q.Committed = true
	}
}

func (s *Server) setFailed(q *Query) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q.Failed = true
}

// errDropped ends a connection on purpose (Failure.Drop or GOODBYE).
var errDropped = errors.New("connection dropped")

type txn struct {
	id         int
	meta       map[string]any
	queries    []*Query
	failCommit *Failure
	failQuery  *Query
	nextQid    int64
}

type stream struct {
	q        *Query
	qid      int64 // -1 for auto-commit
	fields   []string
	rows     [][]any
	pos      int
	read     bool   // handler answered: SUCCESS type "r"
	typ      string // handler's Answer.Type, "" for the default
	notes    []Notification
	failPull *Failure
	failEnd  *Failure
}

// conn is one Bolt connection; only its goroutine touches it.
type conn struct {
	s      *Server
	nc     net.Conn
	id     string
	r      *bufio.Reader
	w      *bufio.Writer
	hello  bool
	authed bool
	failed bool
	tx     *txn
	// streams are the open results by qid; auto-commit uses -1.
	streams map[int64]*stream
	lastQid int64
}

func (c *conn) serve() error {
	if err := c.handshake(); err != nil {
		return err
	}
	c.streams = map[int64]*stream{}
	for {
		if c.r.Buffered() == 0 {
			if err := c.w.Flush(); err != nil {
				return err
			}
		}
		msg, err := c.readMessage()
		if err != nil {
			return err
		}
		if err := c.handle(msg); err != nil {
			if errors.Is(err, errDropped) {
				return nil
			}
			return err
		}
	}
}

// handshake reads the magic and four proposals and answers 5.2 if any
// proposal's range contains it, else 0.0 (then closes). Proposal bytes are
// [unused, range, minor, major]; the manifest marker 0xFF.1 is not a
// version and is skipped, as Memgraph does.
func (c *conn) handshake() error {
	var b [20]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		return fmt.Errorf("read handshake: %w", err)
	}
	if binary.BigEndian.Uint32(b[:4]) != 0x6060B017 {
		return fmt.Errorf("handshake: bad magic % x", b[:4])
	}
	var props [4]uint32
	ok := false
	for i := range 4 {
		p := b[4+4*i : 8+4*i]
		props[i] = binary.BigEndian.Uint32(p)
		rng, minor, major := int(p[1]), int(p[2]), p[3]
		if major == 5 && minor >= 2 && minor-rng <= 2 {
			ok = true
		}
	}
	c.s.mu.Lock()
	c.s.proposals = append(c.s.proposals, props)
	c.s.mu.Unlock()
	if !ok {
		_, _ = c.nc.Write([]byte{0, 0, 0, 0})
		return errDropped
	}
	_, err := c.nc.Write([]byte{0, 0, 2, 5})
	return err
}

// readMessage reads one chunked message: 2-byte big-endian chunk sizes,
// ended by a zero-size chunk. Zero chunks between messages are NOOPs.
func (c *conn) readMessage() ([]byte, error) {
	var msg []byte
	var hdr [2]byte
	for {
		if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
			return nil, err
		}
		n := int(binary.BigEndian.Uint16(hdr[:]))
		if n == 0 {
			if len(msg) == 0 {
				continue
			}
			return msg, nil
		}
		if len(msg)+n > maxMessage {
			return nil, fmt.Errorf("message over %d bytes", maxMessage)
		}
		start := len(msg)
		msg = append(msg, make([]byte, n)...)
		if _, err := io.ReadFull(c.r, msg[start:]); err != nil {
			return nil, fmt.Errorf("read chunk of %d bytes: %w", n, err)
		}
	}
}

// send writes one message struct, chunked at 65535 bytes.
func (c *conn) send(tag byte, fields ...any) error {
	e := encoder{buf: make([]byte, 0, 64)}
	e.structHeader(tag, len(fields))
	for _, f := range fields {
		if err := e.value(f); err != nil {
			return fmt.Errorf("encode message %#02x: %w", tag, err)
		}
	}
	for b := e.buf; len(b) > 0; {
		n := min(len(b), 0xFFFF)
		if _, err := c.w.Write(binary.BigEndian.AppendUint16(nil, uint16(n))); err != nil {
			return err
		}
		if _, err := c.w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	_, err := c.w.Write([]byte{0, 0})
	return err
}

func (c *conn) success(meta map[string]any) error {
	if meta == nil {
		meta = map[string]any{}
	}
	return c.send(msgSuccess, meta)
}

// fail answers FAILURE and enters the FAILED state.
func (c *conn) fail(code, message string) error {
	c.failed = true
	return c.send(msgFailure, map[string]any{"code": code, "message": message})
}

// inject applies an injected failure to q: drop or FAILURE.
func (c *conn) inject(f Failure, q *Query) error {
	if q != nil {
		c.s.setFailed(q)
	}
	if f.Drop {
		_ = c.w.Flush()
		_ = c.nc.Close()
		return errDropped
	}
	code, message := f.Code, f.Message
	if code == "" {
		code = CodeTransient
	}
	if message == "" {
		message = "injected failure"
	}
	return c.fail(code, message)
}

// invalid reports a protocol misuse to the client and to Server.Errors.
func (c *conn) invalid(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	c.s.addErr(fmt.Errorf("%s: %s", c.id, msg))
	return c.fail(codeInvalid, msg)
}

func (c *conn) handle(msg []byte) error {
	d := decoder{buf: msg}
	n, tag, err := d.header()
	if err != nil {
		return fmt.Errorf("decode message header: %w", err)
	}
	fields := make([]any, n)
	for i := range fields {
		if fields[i], err = d.value(0); err != nil {
			return fmt.Errorf("decode message %#02x field %d: %w", tag, i, err)
		}
	}
	if d.pos != len(msg) {
		return fmt.Errorf("message %#02x: %d trailing bytes", tag, len(msg)-d.pos)
	}
	switch tag {
	case msgGoodbye:
		return errDropped
	case msgReset:
		c.failed = false
		c.tx = nil
		c.streams = map[int64]*stream{}
		return c.success(nil)
	case msgHello:
		if c.hello {
			return c.invalid("HELLO sent twice")
		}
		c.hello = true
		return c.success(map[string]any{"server": ServerAgent, "connection_id": c.id})
	}
	if !c.hello {
		return fmt.Errorf("message %#02x before HELLO", tag)
	}
	if c.failed {
		return c.send(msgIgnored)
	}
	switch tag {
	case msgLogon:
		return c.logon(fields)
	case msgLogoff:
		c.authed = false
		return c.success(nil)
	}
	if !c.authed {
		return c.invalid("message %#02x before LOGON", tag)
	}
	switch tag {
	case msgBegin:
		return c.begin(fields)
	case msgRun:
		return c.run(fields)
	case msgPull:
		return c.pull(fields, true)
	case msgDiscard:
		return c.pull(fields, false)
	case msgCommit:
		return c.commit()
	case msgRollback:
		if c.tx == nil {
			return c.invalid("ROLLBACK outside a transaction")
		}
		c.tx = nil
		c.streams = map[int64]*stream{}
		return c.success(nil)
	case msgTelemetry:
		return c.success(nil)
	case msgRoute:
		return c.fail(CodeClient, "You cannot fetch routing table from an instance which is not part of a cluster.")
	}
	return c.invalid("unknown message %#02x", tag)
}

func (c *conn) logon(fields []any) error {
	if len(fields) != 1 {
		return c.invalid("LOGON has %d fields, want 1", len(fields))
	}
	token, _ := fields[0].(map[string]any)
	c.s.mu.Lock()
	c.s.logons = append(c.s.logons, token)
	check, user, password := c.s.checkAuth, c.s.user, c.s.password
	c.s.mu.Unlock()
	if check && (token["scheme"] != "basic" || token["principal"] != user || token["credentials"] != password) {
		return c.fail(CodeUnauthenticated, "Authentication failure")
	}
	c.authed = true
	return c.success(nil)
}

func (c *conn) begin(fields []any) error {
	if c.tx != nil {
		return c.invalid("BEGIN inside transaction %d", c.tx.id)
	}
	if len(c.streams) > 0 {
		return c.invalid("BEGIN while an auto-commit result is open")
	}
	meta, _ := fields[0].(map[string]any)
	c.s.mu.Lock()
	c.s.nextTx++
	c.tx = &txn{id: c.s.nextTx, meta: meta}
	c.s.mu.Unlock()
	return c.success(nil)
}

func (c *conn) run(fields []any) error {
	if len(fields) != 3 {
		return c.invalid("RUN has %d fields, want 3", len(fields))
	}
	text, ok := fields[0].(string)
	if !ok {
		return c.invalid("RUN query is %T, want string", fields[0])
	}
	params, _ := fields[1].(map[string]any)
	extra, _ := fields[2].(map[string]any)
	if c.tx == nil && len(c.streams) > 0 {
		return c.invalid("RUN while an auto-commit result is open")
	}
	q := &Query{Text: text, Params: params, Meta: extra, Conn: c.id}
	st := &stream{q: q, qid: -1}
	if c.tx != nil {
		q.Tx, q.Meta = c.tx.id, c.tx.meta
		st.qid = c.tx.nextQid
		c.tx.nextQid++
		c.tx.queries = append(c.tx.queries, q)
	}
	c.s.record(q)

	if f, ok := c.s.match(text); ok {
		switch {
		case f.OnCommit && c.tx != nil:
			c.tx.failCommit, c.tx.failQuery = &f, q
		case f.OnCommit:
			st.failEnd = &f
		case f.OnPull:
			st.failPull = &f
		default:
			return c.inject(f, q)
		}
	}

	c.s.mu.Lock()
	h, delay := c.s.respond, c.s.delay
	c.s.mu.Unlock()
	if delay != nil {
		time.Sleep(delay(*q))
	}
	if h != nil {
		if a, ok := h(*q); ok {
			st.fields, st.rows, st.notes = a.Fields, a.Rows, a.Notifications
			st.read = len(a.Fields) > 0
			st.typ = a.Type
			if a.Writes && st.typ == "" {
				st.typ = "rw"
			}
			if a.Writes && c.tx != nil && c.tx.meta["mode"] == "r" {
				return c.inject(Failure{Code: CodeClient, Message: "Accessor type READ and query type RW are misaligned!"}, q)
			}
			if a.Fail != nil {
				switch {
				case a.Fail.OnPull:
					st.failPull = a.Fail
				default:
					return c.inject(*a.Fail, q)
				}
			}
		}
	}
	if st.fields == nil {
		st.fields = []string{}
	}
	c.streams[st.qid] = st
	c.lastQid = st.qid
	meta := map[string]any{"fields": st.fields, "t_first": int64(0)}
	if c.tx != nil {
		meta["qid"] = st.qid
	}
	return c.success(meta)
}

// pull answers PULL (records) or DISCARD (none) for the stream named by
// "qid" (-1 or absent: the last RUN).
func (c *conn) pull(fields []any, records bool) error {
	if len(fields) != 1 {
		return c.invalid("PULL/DISCARD has %d fields, want 1", len(fields))
	}
	extra, _ := fields[0].(map[string]any)
	n, _ := extra["n"].(int64)
	qid := int64(-1)
	if v, ok := extra["qid"].(int64); ok {
		qid = v
	}
	if qid == -1 && c.tx != nil {
		qid = c.lastQid
	}
	st, ok := c.streams[qid]
	if !ok {
		return c.invalid("PULL/DISCARD for qid %d: no open result", qid)
	}
	if st.failPull != nil {
		delete(c.streams, qid)
		return c.inject(*st.failPull, st.q)
	}
	left := len(st.rows) - st.pos
	take := left
	if n >= 0 && int64(left) > n {
		take = int(n)
	}
	if records {
		for _, row := range st.rows[st.pos : st.pos+take] {
			if err := c.send(msgRecord, row); err != nil {
				c.s.addErr(fmt.Errorf("%s: record of %q: %w", c.id, st.q.Text, err))
				delete(c.streams, qid)
				c.s.setFailed(st.q)
				return c.fail(CodeClient, err.Error())
			}
		}
	}
	st.pos += take
	if st.pos < len(st.rows) {
		return c.success(map[string]any{"has_more": true})
	}
	delete(c.streams, qid)
	if st.failEnd != nil {
		return c.inject(*st.failEnd, st.q)
	}
	if c.tx == nil {
		c.s.setCommitted(st.q)
	}
	typ := "w"
	if st.read {
		typ = "r"
	}
	if st.typ != "" {
		typ = st.typ
	}
	meta := map[string]any{"type": typ, "t_last": int64(0)}
	if len(st.notes) > 0 {
		notes := make([]any, len(st.notes))
		for i, n := range st.notes {
			notes[i] = map[string]any{"severity": n.Severity, "code": n.Code, "title": n.Title, "description": n.Description}
		}
		meta["notifications"] = notes
	}
	return c.success(meta)
}

func (c *conn) commit() error {
	if c.tx == nil {
		return c.invalid("COMMIT outside a transaction")
	}
	tx := c.tx
	c.tx = nil
	c.streams = map[int64]*stream{}
	if tx.failCommit != nil {
		return c.inject(*tx.failCommit, tx.failQuery)
	}
	c.s.setCommitted(tx.queries...)
	// Memgraph produces no bookmarks (memgraph.md §1).
	return c.success(nil)
}
