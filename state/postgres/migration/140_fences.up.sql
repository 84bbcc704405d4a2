-- Fencing tokens of pipeline locks: each time a session takes a pipeline's
-- lock (Store.Lock) the pipeline's token grows by one, and every commit made
-- under that lock checks the token is still its own, so a run whose lock was
-- lost (its session ended) cannot commit after the next holder started.
CREATE TABLE IF NOT EXISTS fences (
    pipeline text PRIMARY KEY,
    token bigint NOT NULL
);
