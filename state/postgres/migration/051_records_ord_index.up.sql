-- 051_records_ord_index: records in listing order (state.Store.RecordScan):
-- keys compare in byte order (COLLATE "C"), as the pipeline compares them;
-- the columns a run compares are included, so reading a source's stored
-- side is an index-only scan.
CREATE INDEX records_ord ON records (pipeline, source, ord, key COLLATE "C")
    INCLUDE (hash, fingerprint, origin_scope, origin_id);
