-- 002_triggers: run requests any daemon replica can serve (state.TriggerQueue).
-- A trigger is pending until done_at is set; the replica holding the
-- pipeline's advisory lock claims all pending triggers of the pipeline
-- (claimed_at) and runs them as one run (run_id).

CREATE TABLE triggers (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pipeline   TEXT        NOT NULL,
    mode       TEXT        NOT NULL,
    reason     TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    claimed_at TIMESTAMPTZ,            -- NULL until claimed
    run_id     BIGINT      NOT NULL DEFAULT 0,
    done_at    TIMESTAMPTZ             -- NULL while pending
);
CREATE INDEX triggers_pending ON triggers (pipeline, id) WHERE done_at IS NULL;
