-- 052_link_docs: the link index (state.Commit.LinkDocs): one row per
-- document of a pipeline with what the link pass needs to find the
-- documents a change concerns (identifiers, the identifiers its references
-- name), so that it reads the properties of those documents only. data is
-- opaque to state.
CREATE TABLE link_docs (
    pipeline TEXT  NOT NULL,
    source   TEXT  NOT NULL,
    key      TEXT  NOT NULL,
    data     BYTEA NOT NULL,
    PRIMARY KEY (pipeline, source, key)
);
