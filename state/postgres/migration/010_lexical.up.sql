-- 010_lexical: the lexical index (state.LexicalRow). One row per chunk,
-- element, term or table-row node of a pipeline; its text, already
-- normalized by the lexical analyzer (words joined by spaces), is kept as a
-- tsvector of the 'simple' configuration (lower-case, no stop words, no
-- stemming: the analyzer did that), whose positions give the term
-- frequencies. BM25 is computed from len, the row counts per kind and those
-- frequencies.

CREATE TABLE lexical (
    pipeline   TEXT     NOT NULL,
    source     TEXT     NOT NULL,
    record_key TEXT     NOT NULL,
    node       TEXT     NOT NULL,      -- state.LexicalRef.ID
    kind       TEXT     NOT NULL,
    len        INTEGER  NOT NULL,      -- length in terms
    terms      TSVECTOR NOT NULL,
    PRIMARY KEY (pipeline, source, record_key, node)
);
CREATE INDEX lexical_kind ON lexical (pipeline, kind) INCLUDE (len);
CREATE INDEX lexical_terms ON lexical USING gin (terms);
