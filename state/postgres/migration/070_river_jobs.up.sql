-- 070_river_jobs: pipeline runs are River jobs (daemon/jobs.go). River's
-- tables (river_job, river_leader, river_queue, ...) are created in this
-- schema by River's own migrations, which Store.Migrate applies after
-- kgsync's. The trigger queue of 002 is dropped: a trigger still pending
-- when a daemon is upgraded is not carried over (its change is not lost:
-- the next run of the pipeline diffs against state and picks it up).

DROP TABLE triggers;

-- A pipeline's job generation: a queued River job is unique per pipeline
-- and generation, and the job that takes the pipeline's lock moves the
-- generation on before its run starts (state.JobGenerations).
CREATE TABLE sync_generations (
    pipeline   TEXT   PRIMARY KEY,
    generation BIGINT NOT NULL
);
