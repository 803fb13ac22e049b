-- reaper schema, version 3: a dead letter's identity names its vhost and
-- origin queue, and a new death of a parked identity is a new occurrence
-- (core/rp_deadletter.h, IDENTITY, DEATH and OCCURRENCE; README "Dead-letter
-- identity").
--
-- Before: identity "id:<message_id>" or "sha256:<hex>", one row per identity.
-- After:  identity "id:<ESC vhost>/<ESC origin>/<message_id>" or
--         "sha256:<ESC vhost>/<hex>" (the digest itself, which already
--         covers the origin, is unchanged), one row per (identity, death),
--         each with its own job and gate; `occurrence` numbers an identity's
--         rows in the order they were parked.
--
-- Existing rows are rewritten to what reaperd now computes for the same
-- message, so that a copy still on a dead-letter queue, read again by the
-- backfill or redelivered to the tap, finds its row and opens no second gate:
--   - the vhost is the one the row's job names (every park wrote it), else
--     "/";
--   - the origin is the row's origin_queue read back from its rendering
--     (rp_untrusted.h: quoted, escaped). A rendering that was cut (an origin
--     longer than 200 characters, followed by "...") cannot be read back and
--     is used whole: such a row keeps an identity no new park computes;
--   - the death is computed from the stored x-death headers by the DEATH
--     rule (the first death falls back to first_death_at when the headers
--     were not stored).
-- The job's payload "identity" follows its row. Ledger events keep the
-- identity they were written with (the ledger is append-only).

-- ESC() of the IDENTITY rule, over bytes.
CREATE FUNCTION pg_temp.rp_esc(b bytea) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(string_agg(CASE WHEN x BETWEEN 33 AND 126 AND x NOT IN (37, 47) THEN chr(x)
                                    ELSE '%' || upper(lpad(to_hex(x), 2, '0')) END,
                               '' ORDER BY i), '')
    FROM generate_series(0, length(b) - 1) AS i, LATERAL (SELECT get_byte(b, i) AS x) AS g
$$;

-- The raw bytes of a value rendered by rp_untrusted_render(): the text
-- between the quotes with \" \\ \n \r \t \uXXXX \xNN undone. A rendering
-- that is not one whole quoted value (cut, or not rendered) is used as it is.
CREATE FUNCTION pg_temp.rp_unrender(r text) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    inner_text text;
    out_bytes bytea := ''::bytea;
    i int := 1;
    n int;
    c text;
    cp int;
BEGIN
    IF r IS NULL OR length(r) < 2 OR left(r, 1) <> '"' OR right(r, 1) <> '"' THEN
        RETURN convert_to(coalesce(r, ''), 'UTF8');
    END IF;
    inner_text := substr(r, 2, length(r) - 2);
    n := length(inner_text);
    WHILE i <= n LOOP
        c := substr(inner_text, i, 1);
        IF c = '\' AND i < n THEN
            c := substr(inner_text, i + 1, 1);
            IF c = 'n' THEN
                out_bytes := out_bytes || '\x0a'::bytea;
                i := i + 2;
            ELSIF c = 'r' THEN
                out_bytes := out_bytes || '\x0d'::bytea;
                i := i + 2;
            ELSIF c = 't' THEN
                out_bytes := out_bytes || '\x09'::bytea;
                i := i + 2;
            ELSIF c = 'x' THEN
                out_bytes := out_bytes || decode(substr(inner_text, i + 2, 2), 'hex');
                i := i + 4;
            ELSIF c = 'u' THEN
                cp := ('x' || lpad(substr(inner_text, i + 2, 4), 8, '0'))::bit(32)::int;
                out_bytes := out_bytes || CASE WHEN cp = 0 THEN '\x00'::bytea
                                               ELSE convert_to(chr(cp), 'UTF8') END;
                i := i + 6;
            ELSE
                out_bytes := out_bytes || convert_to(c, 'UTF8');
                i := i + 2;
            END IF;
        ELSE
            out_bytes := out_bytes || convert_to(c, 'UTF8');
            i := i + 1;
        END IF;
    END LOOP;
    RETURN out_bytes;
END
$$;

-- DEATH of the stored headers (x-death in the form of rp_amqp_restore.h):
-- the oldest entry time, "/", the sum of the entries' counts.
CREATE FUNCTION pg_temp.rp_death(h jsonb, first_death timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    WITH e AS (
        SELECT v FROM jsonb_array_elements(CASE WHEN jsonb_typeof(h -> 'x-death') = 'array'
                                                THEN h -> 'x-death' ELSE '[]'::jsonb END) AS v),
    t AS (
        SELECT min((v -> 'time' ->> 'value')::numeric) AS first
        FROM e
        WHERE jsonb_typeof(v) = 'object' AND v -> 'time' ->> '$amqp' = 'T'
          AND (v -> 'time' ->> 'value') ~ '^[0-9]+$'
          AND (v -> 'time' ->> 'value')::numeric <= 9223372036854775807),
    c AS (
        SELECT least(coalesce(sum(CASE WHEN k ~ '^-?[0-9]+$' AND k::numeric >= 1
                                            AND k::numeric <= 9223372036854775807
                                       THEN k::numeric ELSE 1 END), 0),
                     9223372036854775807) AS n
        FROM (SELECT CASE WHEN jsonb_typeof(v) <> 'object' THEN NULL
                          WHEN jsonb_typeof(v -> 'count') = 'number' THEN v ->> 'count'
                          WHEN v -> 'count' ->> '$amqp' IN ('b', 'B', 's', 'u', 'I', 'i', 'L')
                               AND jsonb_typeof(v -> 'count' -> 'value') = 'number'
                          THEN v -> 'count' ->> 'value' END AS k
              FROM e) AS counts)
    SELECT coalesce(t.first::int8::text,
                    floor(extract(epoch FROM first_death))::int8::text, '')
           || '/' || c.n::int8::text
    FROM t, c
$$;

ALTER TABLE dead_letter ADD COLUMN death text;
ALTER TABLE dead_letter ADD COLUMN occurrence int NOT NULL DEFAULT 1 CHECK (occurrence >= 1);

UPDATE dead_letter AS dl
SET identity = CASE
        WHEN dl.identity LIKE 'id:%'
        THEN 'id:' || pg_temp.rp_esc(convert_to(coalesce(j.payload ->> 'vhost', '/'), 'UTF8'))
             || '/' || pg_temp.rp_esc(pg_temp.rp_unrender(dl.origin_queue))
             || '/' || substr(dl.identity, 4)
        ELSE 'sha256:' || pg_temp.rp_esc(convert_to(coalesce(j.payload ->> 'vhost', '/'), 'UTF8'))
             || '/' || substr(dl.identity, 8)
    END,
    death = pg_temp.rp_death(dl.headers, dl.first_death_at)
FROM job AS j
WHERE j.id = dl.job_id;

UPDATE job AS j
SET payload = jsonb_set(j.payload, '{identity}', to_jsonb(dl.identity))
FROM dead_letter AS dl
WHERE dl.job_id = j.id AND jsonb_typeof(j.payload) = 'object';

ALTER TABLE dead_letter ALTER COLUMN death SET NOT NULL;
ALTER TABLE dead_letter DROP CONSTRAINT dead_letter_pkey;
-- A death is parked once; the park looks an identity's rows up by this
-- key's prefix.
ALTER TABLE dead_letter ADD PRIMARY KEY (identity, death);

DROP FUNCTION pg_temp.rp_esc(bytea);
DROP FUNCTION pg_temp.rp_unrender(text);
DROP FUNCTION pg_temp.rp_death(jsonb, timestamptz);
