-- 050_records_rowid_intents: records become a rowid table with a unique
-- key index, and batches get write-ahead intents.
--
-- In the WITHOUT ROWID table of 001 a record's whole row (props included,
-- a few hundred bytes) sat in the key B-tree, so rows written in an order
-- unrelated to their keys (any CSV, any API) touched one random leaf page
-- each: about one page write per row per transaction once the table
-- outgrew the page cache (1M rows: 55 s of inserts, against 6 s in key
-- order). Now rows are appended in the order they are written and only the
-- narrow (pipeline, source, key) index is updated at random.
--
-- ord is the record's place in its source's listing order (state.Record.Ord).
-- The table is rebuilt with the columns listed: a migration numbered below
-- 050 that adds a column to records must add it here too.

CREATE TABLE records_050 (
    id          INTEGER PRIMARY KEY,
    pipeline    TEXT    NOT NULL,
    source      TEXT    NOT NULL,
    "key"       TEXT    NOT NULL,
    hash        INTEGER NOT NULL,
    fingerprint INTEGER NOT NULL,
    anchor      TEXT    NOT NULL DEFAULT '',
    props       BLOB,                  -- JSON bytes as given; NULL when empty
    updated_at  INTEGER NOT NULL,
    origin_scope TEXT   NOT NULL DEFAULT '',  -- 020
    origin_id   INTEGER NOT NULL DEFAULT 0,   -- 020
    ord         INTEGER NOT NULL DEFAULT 0
);
INSERT INTO records_050 (pipeline, source, "key", hash, fingerprint, anchor, props, updated_at, origin_scope, origin_id)
    SELECT pipeline, source, "key", hash, fingerprint, anchor, props, updated_at, origin_scope, origin_id
    FROM records ORDER BY pipeline, source, "key";
DROP TABLE records; -- and its index records_origin (020), made again below
ALTER TABLE records_050 RENAME TO records;
CREATE UNIQUE INDEX records_key ON records (pipeline, source, "key");
CREATE INDEX records_origin ON records (pipeline, source, origin_scope, origin_id) WHERE origin_scope <> '';

-- A batch's write-ahead intent (state.Intent): stored with the batch's
-- records before its sink write, removed by the commit after the sink
-- acknowledged it. data is opaque to state.
CREATE TABLE intents (
    pipeline   TEXT    NOT NULL,
    id         INTEGER NOT NULL,
    data       BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (pipeline, id)
) WITHOUT ROWID;
