-- 001_init: the tables of state (see state/state.go for what each holds).
-- Times are unix microseconds (UTC). uint64 hashes are stored as the int64
-- with the same bit pattern, so values with the high bit set read back
-- negative in the sqlite3 shell but round-trip exactly through the Store.

CREATE TABLE runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    pipeline    TEXT    NOT NULL,
    "trigger"   TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,               -- NULL while running
    counts      TEXT    NOT NULL DEFAULT '{}', -- state.Counts as JSON
    error       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX runs_pipeline_id ON runs (pipeline, id);

CREATE TABLE records (
    pipeline    TEXT    NOT NULL,
    source      TEXT    NOT NULL,
    "key"       TEXT    NOT NULL,
    hash        INTEGER NOT NULL,
    fingerprint INTEGER NOT NULL,
    anchor      TEXT    NOT NULL DEFAULT '',
    props       BLOB,                  -- JSON bytes as given; NULL when empty
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (pipeline, source, "key")
) WITHOUT ROWID;

CREATE TABLE chunks (
    pipeline   TEXT    NOT NULL,
    source     TEXT    NOT NULL,
    record_key TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    hash       INTEGER NOT NULL,
    text_hash  INTEGER NOT NULL,
    position   INTEGER NOT NULL,
    props      BLOB,
    PRIMARY KEY (pipeline, source, record_key, id)
) WITHOUT ROWID;
CREATE INDEX chunks_record_position ON chunks (pipeline, source, record_key, position);

-- Vectors are float32 little-endian, 4 bytes per dimension. A rowid table,
-- since rows of a few KiB are too large for WITHOUT ROWID.
CREATE TABLE embeddings (
    model      TEXT    NOT NULL,
    text_hash  INTEGER NOT NULL,
    vector     BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (model, text_hash)
);

CREATE TABLE cursors (
    pipeline   TEXT    NOT NULL,
    source     TEXT    NOT NULL,
    cursor     TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (pipeline, source)
) WITHOUT ROWID;
