-- reaper schema, version 15: a dead letter and its gate name their vhost
-- (issue #19 item 1: "everything vhost-scoped says its vhost").
--
-- With broker.vhosts reaperd parks the dead letters of several vhosts into
-- one schema; the vhost was in the identity (escaped) and in the job's
-- payload only. The park (RP__PG_PARK_SET in rp_pg_sql.c) now writes it on
-- the dead_letter row and, as it copies queue, origin and reason there
-- (version 13), on the gate it opens; `gates`, `gate ID`, the console and
-- the GateAnswered event read it from the gate. A gate without a dead
-- letter (delivery_exhausted) has it NULL. It never changes after the park.
--
-- Existing rows take the vhost from their identity, the row's own key:
-- since version 3 every identity is "id:" ESC(vhost) "/" ... or "sha256:"
-- ESC(vhost) "/" <hex> (core/rp_deadletter.h, IDENTITY), and ESC escapes
-- every "/" and "%" of the vhost, so the vhost is the text up to the first
-- "/" after the prefix with its %XX undone. (The job payload's "vhost" is
-- the same value, written by every park since version 1; version 3 built
-- the identities from it, "/" where a payload had none.) An identity not of
-- either form (none is written) gets "/", the vhost version 3 gave a row
-- without one.
--
-- The fill rewrites every dead_letter and dead-letter gate row once (a new
-- row version each: the tables grow until vacuumed) and holds their row
-- locks to the end.
--
-- dead_letter.vhost is required. A reaperd older than this version still
-- runs beside the migrated schema during a rollout (the chart migrates in
-- the new pod's init container while the old pods park): its park names no
-- vhost, so a trigger takes it from the identity, as the fill below does,
-- and the old pod's parks go on. Its gates keep a NULL vhost (shown empty)
-- until answered; the trigger runs only when a park names no vhost, so a
-- park of this version pays only its WHEN test.

-- ESC() undone: %XX to its byte, as text (a vhost is UTF-8). Kept: the
-- trigger below uses it.
CREATE FUNCTION dead_letter_unescape(e text) RETURNS text LANGUAGE plpgsql IMMUTABLE
    SET search_path FROM CURRENT AS $$
DECLARE
    out_bytes bytea := ''::bytea;
    i int := 1;
    n int := length(e);
    c text;
BEGIN
    WHILE i <= n LOOP
        c := substr(e, i, 1);
        IF c = '%' AND i + 2 <= n AND substr(e, i + 1, 2) ~ '^[0-9A-Fa-f]{2}$' THEN
            out_bytes := out_bytes || decode(substr(e, i + 1, 2), 'hex');
            i := i + 3;
        ELSE
            out_bytes := out_bytes || convert_to(c, 'UTF8');
            i := i + 1;
        END IF;
    END LOOP;
    RETURN convert_from(out_bytes, 'UTF8');
END
$$;

-- The vhost of an identity: the default vhost "/" (ESC: "%2F") and a vhost
-- with nothing escaped are read without the function.
CREATE FUNCTION dead_letter_identity_vhost(identity text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path FROM CURRENT AS $$
    SELECT CASE WHEN e IS NULL THEN '/'
                WHEN e = '%2F' THEN '/'
                WHEN position('%' IN e) = 0 THEN e
                ELSE dead_letter_unescape(e) END
    FROM (SELECT substring(identity FROM '^(?:id|sha256):([^/]*)/') AS e) AS s
$$;

ALTER TABLE dead_letter ADD COLUMN vhost text;
ALTER TABLE gate ADD COLUMN vhost text;

UPDATE dead_letter SET vhost = dead_letter_identity_vhost(identity);
UPDATE gate g SET vhost = dl.vhost FROM dead_letter dl WHERE dl.gate_id = g.id;

ALTER TABLE dead_letter ALTER COLUMN vhost SET NOT NULL;

-- A park that names no vhost (a reaperd older than this version).
CREATE FUNCTION dead_letter_vhost_fill() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
BEGIN
    NEW.vhost := dead_letter_identity_vhost(NEW.identity);
    RETURN NEW;
END
$$;

CREATE TRIGGER dead_letter_vhost_fill BEFORE INSERT ON dead_letter
    FOR EACH ROW WHEN (NEW.vhost IS NULL)
    EXECUTE FUNCTION dead_letter_vhost_fill();
