-- 020_origins_warnings: what a run warns the user about (a renamed Grist
-- table or column whose old name the config still uses: state.Run.Warnings),
-- and each record's upstream origin (state.Record.Origin: a Grist tableRef
-- and row id, which outlive table renames and key changes), so that a
-- source can look a row's stored key up by its id (state.OriginIndex).

ALTER TABLE runs ADD COLUMN warnings JSONB NOT NULL DEFAULT '[]';
ALTER TABLE records ADD COLUMN origin_scope TEXT NOT NULL DEFAULT '';
ALTER TABLE records ADD COLUMN origin_id BIGINT NOT NULL DEFAULT 0;
CREATE INDEX records_origin ON records (pipeline, source, origin_scope, origin_id) WHERE origin_scope <> '';
