-- reaper schema, version 13: the dead-letter filters of `gates` on the gate
-- row itself (issue #20: "gates with filters over 1,000,000 gates answers in
-- < 100 ms"; the console's groups of open gates by origin and reason).
--
-- A gate's state (answer) is on gate, its dead letter's queue, origin queue
-- and reason were on dead_letter only: a filter on both walked one table's
-- index and probed the other for each row (`--origin Q --older-than 7d
-- --after ID`: 199 ms at 1,000,000 gates on a quiet machine,
-- bench/REPORT.md). The park (RP__PG_PARK_SET in rp_pg_sql.c) now copies the
-- three onto the gate it opens; a gate without a dead letter
-- (delivery_exhausted) has them NULL, as the old LEFT JOIN gave them. They
-- never change after the park (neither does the dead letter's row).
--
-- Partial indexes over the open gates, each filter first, then the id (the
-- page walks newest first and stops after limit + 1, the count after
-- 10,001), then kind and created_at as keys (`--kind`, `--older-than` checked
-- in the index, without reading the row). gate_open_by_queue carries origin
-- and reason too: the console's groups (count, oldest, newest per kind,
-- origin, reason over all open gates) read it alone (an index-only scan).
--
-- The fill rewrites every gate row that has a dead letter once (a new row
-- version each: the table grows until vacuumed) and holds its row locks to
-- the end; the index builds lock writes to gate while they run (each about
-- 2 s a million gates by hand on a loaded 2-core machine; the fill was not
-- timed at that size).
ALTER TABLE gate ADD COLUMN queue text, ADD COLUMN origin_queue text, ADD COLUMN reason text;
UPDATE gate g SET queue = dl.queue, origin_queue = dl.origin_queue, reason = dl.reason
FROM dead_letter dl WHERE dl.gate_id = g.id;
CREATE INDEX gate_open_by_origin ON gate (origin_queue, id, kind, created_at, reason)
    WHERE answer IS NULL;
CREATE INDEX gate_open_by_reason ON gate (reason, id, kind, created_at) WHERE answer IS NULL;
CREATE INDEX gate_open_by_queue ON gate (queue, id, kind, created_at, origin_queue, reason)
    WHERE answer IS NULL;
