-- 050_records_ord_intents: the records' listing order, and write-ahead
-- intents of batches.
--
-- ord is the record's place in its source's listing order (state.Record.Ord).
ALTER TABLE records ADD COLUMN ord BIGINT NOT NULL DEFAULT 0;

-- A batch's write-ahead intent (state.Intent): stored with the batch's
-- records before its sink write, removed by the commit after the sink
-- acknowledged it. data is opaque to state.
CREATE TABLE intents (
    pipeline   TEXT        NOT NULL,
    id         BIGINT      NOT NULL,
    data       BYTEA       NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (pipeline, id)
);
