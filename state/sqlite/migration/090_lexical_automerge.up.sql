-- 090_lexical_automerge: FTS5 merges 16 segments of a level at a time, not
-- its default 4. Every commit that writes lexical rows flushes them as a
-- new segment, and a first sync commits once a batch: with 4 a row's
-- postings were rewritten once for each of about log4(commits) levels
-- (1,000 commits for 1,000,000 rows), with 16 about half as often. A
-- term's search reads at most 15 segments a level instead of 3.
-- (FTS5 'automerge', https://www.sqlite.org/fts5.html#the_automerge_configuration_option.)
INSERT INTO lexical_fts (lexical_fts, rank) VALUES ('automerge', 16);
