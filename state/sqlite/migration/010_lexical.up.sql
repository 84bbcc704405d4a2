-- 010_lexical: the lexical index (state.LexicalRow). One row per chunk,
-- element, term or table-row node of a pipeline; its text, already
-- normalized by the lexical analyzer (words joined by spaces), lives only
-- in the FTS5 index lexical_fts (contentless, rowid = lexical.doc). BM25 is
-- computed from lexical.len, the row counts per kind and the term
-- frequencies that lexical_vocab (fts5vocab, one row per occurrence) gives.

CREATE TABLE lexical (
    doc        INTEGER PRIMARY KEY,    -- rowid of the row in lexical_fts
    pipeline   TEXT    NOT NULL,
    source     TEXT    NOT NULL,
    record_key TEXT    NOT NULL,
    node       TEXT    NOT NULL,       -- state.LexicalRef.ID
    kind       TEXT    NOT NULL,
    len        INTEGER NOT NULL        -- length in terms
);
CREATE UNIQUE INDEX lexical_ref ON lexical (pipeline, source, record_key, node);
CREATE INDEX lexical_kind ON lexical (pipeline, kind, len);

CREATE VIRTUAL TABLE lexical_fts USING fts5(
    text, content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);
CREATE VIRTUAL TABLE lexical_vocab USING fts5vocab('lexical_fts', 'instance');
