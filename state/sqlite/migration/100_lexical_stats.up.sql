-- 100_lexical_stats: the row count and total length of a pipeline's
-- lexical rows of a kind (what BM25 takes as N and the average length) live
-- in lexical_stats, kept by each commit from the rows it inserts, changes
-- and deletes, instead of being counted from the index lexical_kind at
-- every search. That index took each new row at the end of its (kind, len)
-- group: a commit dirtied one page per distinct length, about 80 pages of
-- a table's first-sync batch (a fifth of the pages it wrote at 100,000
-- rows), and a search of a million rows counted them all (about 250 ms).
CREATE TABLE lexical_stats (
    pipeline  TEXT    NOT NULL,
    kind      TEXT    NOT NULL,
    row_count INTEGER NOT NULL,
    total_len INTEGER NOT NULL,
    PRIMARY KEY (pipeline, kind)
) WITHOUT ROWID;
INSERT INTO lexical_stats (pipeline, kind, row_count, total_len)
    SELECT pipeline, kind, count(*), sum(len) FROM lexical GROUP BY pipeline, kind;
DROP INDEX lexical_kind;
