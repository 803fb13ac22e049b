-- reaper schema, version 12: indexes for `gates` with filters (issue #20:
-- "gates with filters over 1,000,000 gates answers in < 100 ms").
--
-- The gates statement (RP__PG_GATES in rp_pg_sql.c) pages newest first by
-- gate id and counts at most 10,001 matches. Open gates are walked by id in
-- gate_open_by_id, whose kind and created_at let `--kind` and
-- `--older-than` be checked in the index, without reading the gate row;
-- answered ones by the primary key. A dead-letter filter (`--queue`,
-- `--origin`, `--reason`) can start from that dead letter's index instead,
-- in gate id order (bench/REPORT.md, "bench/gates": the plans and times).
--
-- Building them locks writes to gate and dead_letter for as long as it takes
-- (about 10 s a million rows on a loaded 2-core machine).
CREATE INDEX gate_open_by_id ON gate (id, kind, created_at) WHERE answer IS NULL;
CREATE INDEX dead_letter_by_origin ON dead_letter (origin_queue, gate_id);
CREATE INDEX dead_letter_by_reason ON dead_letter (reason, gate_id);
CREATE INDEX dead_letter_by_queue ON dead_letter (queue, gate_id);
