-- 051_records_ord_index: records in listing order (state.Store.RecordScan),
-- covering the columns a run compares, so reading a source's stored side
-- is one sequential index scan.
CREATE INDEX records_ord ON records (pipeline, source, ord, "key", hash, fingerprint, origin_scope, origin_id);
