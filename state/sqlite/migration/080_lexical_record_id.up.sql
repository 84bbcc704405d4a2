-- 080_lexical_record_id: a lexical row is found through its record's id
-- (records.id), not its key. Keys arrive in any order, so an index on
-- (pipeline, source, record_key, node) took every new row at a random
-- place and a batch rewrote about one index page per row; record ids grow
-- as records are stored, so a first sync appends to lexical_record. The
-- key columns stay for the search's answer. Rows of records state does not
-- hold (none are written since this version) are dropped.
ALTER TABLE lexical ADD COLUMN record_id INTEGER NOT NULL DEFAULT 0;
UPDATE lexical SET record_id = coalesce((SELECT r.id FROM records r
    WHERE r.pipeline = lexical.pipeline AND r.source = lexical.source AND r."key" = lexical.record_key), 0);
DELETE FROM lexical_fts WHERE rowid IN (SELECT doc FROM lexical WHERE record_id = 0);
DELETE FROM lexical WHERE record_id = 0;
DROP INDEX lexical_ref;
CREATE UNIQUE INDEX lexical_record ON lexical (record_id, node);
