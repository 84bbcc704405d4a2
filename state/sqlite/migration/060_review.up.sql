-- 060_review: the state of a files pipeline's expert review in Grist
-- (state.ReviewStore). One row per published document and per element
-- (the Grist row it was written as, the expert's input read back from it);
-- the rest of each row is JSON owned by pipeline/review.

CREATE TABLE review_documents (
    pipeline TEXT    NOT NULL,
    doc      TEXT    NOT NULL,
    row_id   INTEGER NOT NULL DEFAULT 0,
    pending  INTEGER NOT NULL DEFAULT 0,
    data     BLOB    NOT NULL,
    PRIMARY KEY (pipeline, doc)
) WITHOUT ROWID;

CREATE TABLE review_elements (
    pipeline TEXT    NOT NULL,
    doc      TEXT    NOT NULL,
    element  TEXT    NOT NULL,
    row_id   INTEGER NOT NULL DEFAULT 0,
    expert   INTEGER NOT NULL DEFAULT 0,
    flagged  INTEGER NOT NULL DEFAULT 0,
    data     BLOB    NOT NULL,
    PRIMARY KEY (pipeline, doc, element)
) WITHOUT ROWID;
CREATE INDEX review_elements_row ON review_elements (pipeline, row_id) WHERE row_id <> 0;
CREATE INDEX review_elements_expert ON review_elements (pipeline) WHERE expert <> 0 OR flagged <> 0;
