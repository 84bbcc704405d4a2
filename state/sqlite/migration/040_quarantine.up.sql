-- 040_quarantine: records a run could not read, parse or embed
-- (state.Quarantined). Such a record keeps its last good version in
-- records, chunks and the graph; this row keeps why it failed, since when
-- and how often, until a run writes, reads cleanly or deletes it. A key
-- ending in "/" or ":" names a part of a listing that failed (a folder, a
-- CSV table): the stored records under it are kept.

CREATE TABLE quarantine (
    pipeline  TEXT    NOT NULL,
    source    TEXT    NOT NULL,
    "key"     TEXT    NOT NULL,
    stage     TEXT    NOT NULL,  -- list, read, parse, embed
    error     TEXT    NOT NULL,
    first_at  INTEGER NOT NULL,  -- unix microseconds
    last_at   INTEGER NOT NULL,
    attempts  INTEGER NOT NULL DEFAULT 1,
    run_id    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (pipeline, source, "key")
);
