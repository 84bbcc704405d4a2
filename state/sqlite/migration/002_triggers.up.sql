-- 002_triggers: run requests (state.TriggerQueue). A trigger is pending
-- until done_at is set; the process holding the pipeline's lock claims all
-- pending triggers of the pipeline (claimed_at) and runs them as one run
-- (run_id). Times are unix microseconds (UTC).

CREATE TABLE triggers (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    pipeline   TEXT    NOT NULL,
    mode       TEXT    NOT NULL,
    reason     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    claimed_at INTEGER,                -- NULL until claimed
    run_id     INTEGER NOT NULL DEFAULT 0,
    done_at    INTEGER                 -- NULL while pending
);
CREATE INDEX triggers_pending ON triggers (pipeline, id) WHERE done_at IS NULL;
