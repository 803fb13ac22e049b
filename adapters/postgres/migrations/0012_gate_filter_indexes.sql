-- reaper schema, version 12: indexes for the gate list's selective filters
-- (issue 20: `reaperctl gates --origin Q [--reason R]`, `--kind K`).
-- The list (RP__PG_GATES) counts every match, so it reads every matching row
-- whatever the page: a filter is fast only when its matches are found
-- without reading the rest. Without these the planner reads all of
-- dead_letter (a sequential scan) for an --origin filter and all open gates
-- for --kind; with them it reads the origin queue's dead letters (one of many
-- queues) or the kind's open gates, and joins the rest by primary key.
-- Measured in bench/gates (bench/REPORT.md): what they cost the park is
-- given there too (one more index entry per dead letter, one per gate).
CREATE INDEX dead_letter_by_origin ON dead_letter (origin_queue, reason);
CREATE INDEX gate_open_by_kind ON gate (kind, id) WHERE answer IS NULL;
