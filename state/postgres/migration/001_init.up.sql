-- 001_init: the tables of state (see state/state.go for what each holds).
-- uint64 hashes are stored as the BIGINT with the same bit pattern, so values
-- with the high bit set read back negative in psql but round-trip exactly
-- through the Store. Props are the JSON bytes exactly as given (BYTEA; read
-- them in psql with convert_from(props, 'UTF8')).

CREATE TABLE runs (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pipeline    TEXT        NOT NULL,
    trigger     TEXT        NOT NULL,
    status      TEXT        NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,            -- NULL while running
    counts      JSONB       NOT NULL DEFAULT '{}', -- state.Counts
    error       TEXT        NOT NULL DEFAULT ''
);
CREATE INDEX runs_pipeline_id ON runs (pipeline, id);

CREATE TABLE records (
    pipeline    TEXT        NOT NULL,
    source      TEXT        NOT NULL,
    key         TEXT        NOT NULL,
    hash        BIGINT      NOT NULL,
    fingerprint BIGINT      NOT NULL,
    anchor      TEXT        NOT NULL DEFAULT '',
    props       BYTEA,                  -- NULL when empty
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (pipeline, source, key)
);

CREATE TABLE chunks (
    pipeline   TEXT    NOT NULL,
    source     TEXT    NOT NULL,
    record_key TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    hash       BIGINT  NOT NULL,
    text_hash  BIGINT  NOT NULL,
    position   INTEGER NOT NULL,
    props      BYTEA,
    PRIMARY KEY (pipeline, source, record_key, id)
);
CREATE INDEX chunks_record_position ON chunks (pipeline, source, record_key, position);

-- Vectors are float32 little-endian, 4 bytes per dimension.
CREATE TABLE embeddings (
    model      TEXT        NOT NULL,
    text_hash  BIGINT      NOT NULL,
    vector     BYTEA       NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (model, text_hash)
);

CREATE TABLE cursors (
    pipeline   TEXT        NOT NULL,
    source     TEXT        NOT NULL,
    cursor     TEXT        NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (pipeline, source)
);
