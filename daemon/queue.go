package daemon

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/kgsync/kgsync/state"
)

// queue is the daemon's River client, whatever its driver: riverpgxv5 on a
// pool of its own for a Postgres store, riversqlite on the store's one
// connection for SQLite. River's tables are in the store's schema or
// database (the store's Migrate creates them).
type queue interface {
	start(ctx context.Context) error
	// stop stops fetching and waits for running jobs (Client.Stop);
	// cancel cancels their contexts (Client.StopAndCancel, without
	// waiting); stopped is closed once the client has stopped.
	stop(ctx context.Context) error
	cancel()
	stopped() <-chan struct{}
	insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	// replace deletes job id and inserts args in its place, in one
	// transaction, unless the job is no longer queued: then it returns
	// rivertype.ErrJobRunning (running) or errNotQueued (finished).
	replace(ctx context.Context, id int64, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	get(ctx context.Context, id int64) (*rivertype.JobRow, error)
	list(ctx context.Context, params *river.JobListParams) ([]*rivertype.JobRow, error)
	// complete marks a SyncArgs job completed from inside its worker, in a
	// transaction of its own (river.JobCompleteTx), with the output
	// recorded so far.
	complete(ctx context.Context, job *river.Job[SyncArgs]) error
	cancelJob(ctx context.Context, id int64) error
	// finalizeDead marks job id cancelled now if it is still running: its
	// replica died (takeOver), and River's rescuer would leave it running
	// until run_timeout plus a minute.
	finalizeDead(ctx context.Context, id int64) error
	retryJob(ctx context.Context, id int64) error
	// argsPipeline is the SQL expression of a job's args.pipeline, and
	// replacedBy the condition that metadata.replaces holds @id, for
	// JobListParams.Where.
	argsPipeline() string
	replacedBy() string
	// close releases what the queue opened (River's Postgres pool).
	close()
}

// errNotQueued is replace's answer for a job that finished meanwhile.
var errNotQueued = errors.New("job is no longer queued")

// riverQueue implements queue for one driver; TTx is its transaction type.
type riverQueue[TTx any] struct {
	client *river.Client[TTx]
	begin  func(ctx context.Context) (tx TTx, commit, rollback func() error, err error)
	// completeTx is river.JobCompleteTx for the driver.
	completeTx func(ctx context.Context, tx TTx, job *river.Job[SyncArgs]) error
	pipeExpr   string
	replExpr   string
	closeFn    func()
	schema     string // River's schema (Postgres), "" on SQLite
}

// newQueue opens a River client on store with cfg (its Schema is set
// here). A Postgres store (one with Pool and Schema, as *postgres.Store)
// gets a new pool with the store pool's configuration, so River's
// listener and fetches never wait behind a pipeline's lock connection; a
// SQLite store (one with DB, as *sqlite.Store) shares its handle, as
// riversqlite advises one open connection, after River's migrations
// (MigrateJobs: opening a SQLite store leaves them out).
func newQueue(store state.Store, cfg *river.Config) (queue, error) {
	type pgStore interface {
		Pool() *pgxpool.Pool
		Schema(ctx context.Context) (string, error)
	}
	type sqliteStore interface {
		DB() *sql.DB
		MigrateJobs(ctx context.Context) error
	}
	ctx := context.Background()
	switch s := store.(type) {
	case pgStore:
		schema, err := s.Schema(ctx)
		if err != nil {
			return nil, fmt.Errorf("job queue: %w", err)
		}
		pool, err := pgxpool.NewWithConfig(ctx, s.Pool().Config())
		if err != nil {
			return nil, fmt.Errorf("job queue: open pool: %w", err)
		}
		c := *cfg
		c.Schema = schema
		client, err := river.NewClient(riverpgxv5.New(pool), &c)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("job queue in schema %q: %w", schema, err)
		}
		return &riverQueue[pgx.Tx]{
			client: client,
			begin: func(ctx context.Context) (pgx.Tx, func() error, func() error, error) {
				tx, err := pool.Begin(ctx)
				if err != nil {
					return nil, nil, nil, err
				}
				return tx, func() error { return tx.Commit(ctx) },
					func() error { return tx.Rollback(context.WithoutCancel(ctx)) }, nil
			},
			completeTx: func(ctx context.Context, tx pgx.Tx, job *river.Job[SyncArgs]) error {
				_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
				return err
			},
			pipeExpr: "args->>'pipeline'",
			replExpr: "metadata->'replaces' @> to_jsonb(@id::bigint)",
			closeFn:  pool.Close,
			schema:   schema,
		}, nil
	case sqliteStore:
		if err := s.MigrateJobs(ctx); err != nil {
			return nil, fmt.Errorf("job queue: %w", err)
		}
		db := s.DB()
		client, err := river.NewClient(riversqlite.New(db), cfg)
		if err != nil {
			return nil, fmt.Errorf("job queue: %w", err)
		}
		return &riverQueue[*sql.Tx]{
			client: client,
			begin: func(ctx context.Context) (*sql.Tx, func() error, func() error, error) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return nil, nil, nil, err
				}
				return tx, tx.Commit, tx.Rollback, nil
			},
			completeTx: func(ctx context.Context, tx *sql.Tx, job *river.Job[SyncArgs]) error {
				_, err := river.JobCompleteTx[*riversqlite.Driver](ctx, tx, job)
				return err
			},
			pipeExpr: "json_extract(args, '$.pipeline')",
			replExpr: "EXISTS (SELECT 1 FROM json_each(metadata, '$.replaces') WHERE value = @id)",
			closeFn:  func() {},
		}, nil
	}
	return nil, fmt.Errorf("job queue: state store %T is neither Postgres nor SQLite", store)
}

func (q *riverQueue[TTx]) start(ctx context.Context) error { return q.client.Start(ctx) }
func (q *riverQueue[TTx]) stop(ctx context.Context) error  { return q.client.Stop(ctx) }
func (q *riverQueue[TTx]) stopped() <-chan struct{}        { return q.client.Stopped() }
func (q *riverQueue[TTx]) argsPipeline() string            { return q.pipeExpr }
func (q *riverQueue[TTx]) replacedBy() string              { return q.replExpr }
func (q *riverQueue[TTx]) close()                          { q.closeFn() }

func (q *riverQueue[TTx]) cancel() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // StopAndCancel cancels the jobs' contexts before it waits; do not wait
	_ = q.client.StopAndCancel(ctx)
}

func (q *riverQueue[TTx]) insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return q.client.Insert(ctx, args, opts)
}

func (q *riverQueue[TTx]) replace(ctx context.Context, id int64, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	tx, commit, rollback, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rollback() }()
	old, err := q.client.JobDeleteTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	switch old.State {
	case rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStatePending:
	default:
		return nil, errNotQueued // it ran since it was read: keep its row
	}
	res, err := q.client.InsertTx(ctx, tx, args, opts)
	if err != nil {
		return nil, err
	}
	if err := commit(); err != nil {
		return nil, err
	}
	return res, nil
}

func (q *riverQueue[TTx]) complete(ctx context.Context, job *river.Job[SyncArgs]) error {
	tx, commit, rollback, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = rollback() }()
	if err := q.completeTx(ctx, tx, job); err != nil {
		return err
	}
	return commit()
}

func (q *riverQueue[TTx]) get(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	return q.client.JobGet(ctx, id)
}

func (q *riverQueue[TTx]) list(ctx context.Context, params *river.JobListParams) ([]*rivertype.JobRow, error) {
	res, err := q.client.JobList(ctx, params)
	if err != nil {
		return nil, err
	}
	return res.Jobs, nil
}

func (q *riverQueue[TTx]) cancelJob(ctx context.Context, id int64) error {
	_, err := q.client.JobCancel(ctx, id)
	return err
}

func (q *riverQueue[TTx]) finalizeDead(ctx context.Context, id int64) error {
	now := time.Now().UTC()
	_, err := q.client.Driver().GetExecutor().JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
		ID: []int64{id}, Attempt: []*int{nil}, ErrData: [][]byte{nil}, FinalizedAt: []*time.Time{&now},
		MetadataDoMerge: []bool{false}, MetadataUpdates: [][]byte{nil}, ScheduledAt: []*time.Time{nil},
		State: []rivertype.JobState{rivertype.JobStateCancelled}, Now: &now, Schema: q.schema,
	})
	return err
}

func (q *riverQueue[TTx]) retryJob(ctx context.Context, id int64) error {
	_, err := q.client.JobRetry(ctx, id)
	if errors.Is(err, rivertype.ErrNotFound) {
		return nil
	}
	return err
}
