-- reaper schema, version 6: the OCCURRENCE rule of core/rp_deadletter.h as a
-- function, so that a park of an identity never parked before (the tap's
-- common case) pays for one index probe rather than for the whole lookup.
--
-- dead_letter_next_occurrence(identity, death) is the occurrence number a
-- park of (identity, death) gives its new row, or NULL when the rule opens
-- none: the death is parked already (seen), or the identity's latest row
-- (highest occurrence, then gate) has this death's lineage (the part of
-- DEATH before '/') and its gate is still open (covered). Otherwise the
-- number is how many rows the identity has, plus one.
--
-- Why a function: the park (RP__PG_PARK in adapters/postgres/rp_pg_sql.c)
-- used to compute this in a CTE of its statement. PostgreSQL sets up every
-- node of a statement's plan at each execution, whether it runs or not (the
-- aggregate, the join with gate and both index scans, about 82,000 of the
-- park's 1,046,000 instructions: bench/REPORT.md). Here the statements run
-- only when reached, and a new identity reaches the first alone.
-- STABLE: every statement in it reads with the calling statement's
-- snapshot, as the CTE did. Each statement reads one table (no join): its
-- plan, made at the first park of a session that needs it, is an index
-- lookup however small the tables were then (a join planned on a table of
-- a few hundred rows without statistics was a hash join over all of gate).
-- Every dead_letter row has its gate (a foreign key), so the latest row is
-- the one the CTE's join found.
-- The tables are named with this schema (the function runs under the
-- caller's search_path).
DO $migration$
BEGIN
    EXECUTE format($function$
CREATE FUNCTION %1$I.dead_letter_next_occurrence(p_identity text, p_death text)
RETURNS int8 LANGUAGE plpgsql STABLE AS $body$
DECLARE
    n int8;
    seen bool;
    latest_death text;
    latest_gate int8;
BEGIN
    IF NOT EXISTS (SELECT FROM %1$I.dead_letter WHERE identity = p_identity) THEN
        RETURN 1;
    END IF;
    SELECT count(*), coalesce(bool_or(death = p_death), false) INTO n, seen
    FROM %1$I.dead_letter WHERE identity = p_identity;
    IF seen THEN
        RETURN NULL;
    END IF;
    SELECT death, gate_id INTO latest_death, latest_gate
    FROM %1$I.dead_letter WHERE identity = p_identity
    ORDER BY occurrence DESC, gate_id DESC LIMIT 1;
    IF split_part(latest_death, '/', 1) = split_part(p_death, '/', 1)
       AND EXISTS (SELECT FROM %1$I.gate WHERE id = latest_gate AND answer IS NULL) THEN
        RETURN NULL;
    END IF;
    RETURN n + 1;
END
$body$
$function$, current_schema());
END
$migration$;
