-- reaper schema, version 4: every lease on its deadline (issue #15).
-- reaperd arms one timer for the earliest lease deadline it knows. A lease
-- claimed after a pass, with an earlier deadline than that timer's, used to
-- wait for it (up to reap.interval_seconds). Now every statement that
-- leases rows tells reaperd the earliest deadline among them:
-- NOTIFY on channel 'reaper_lease_<oid of this job table>' (per table, so
-- several schemas in one database never hear each other; short, so the
-- channel name can never be too long), payload the deadline in Unix
-- milliseconds. reaperd LISTENs and re-arms its timer only when the
-- deadline is earlier than the one armed, so a thousand claims a second
-- cost it a comparison each. Statement-level, so a claim of many rows is
-- one notification; heartbeats notify too (a later deadline: ignored).
-- The function never raises: a worker's claim must not fail on reaper's
-- account.
CREATE FUNCTION job_lease_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    earliest timestamptz;
BEGIN
    SELECT min(lease_expires_at) INTO earliest FROM leased_rows WHERE state = 'leased';
    IF earliest IS NOT NULL AND isfinite(earliest) THEN
        PERFORM pg_notify('reaper_lease_' || TG_RELID::text,
                          floor(extract(epoch FROM earliest) * 1000)::bigint::text);
    END IF;
    RETURN NULL;
END
$$;
-- A trigger with transition tables takes one event: one for each.
CREATE TRIGGER job_lease_notify_insert AFTER INSERT ON job
    REFERENCING NEW TABLE AS leased_rows
    FOR EACH STATEMENT EXECUTE FUNCTION job_lease_notify();
CREATE TRIGGER job_lease_notify_update AFTER UPDATE ON job
    REFERENCING NEW TABLE AS leased_rows
    FOR EACH STATEMENT EXECUTE FUNCTION job_lease_notify();
