-- reaper schema, version 4: every lease on its deadline (issue #15).
-- reaperd arms one timer for the earliest lease deadline it knows. A lease
-- claimed after a pass, with an earlier deadline than that timer's, used to
-- wait for it (up to reap.interval_seconds). Now a row that becomes leased,
-- or whose lease deadline moves, tells reaperd: NOTIFY on channel
-- 'reaper_lease_<oid of this job table>' (per table, so several schemas in
-- one database never hear each other; short, so the channel name can never
-- be too long), payload the deadline in Unix milliseconds. reaperd LISTENs
-- and re-arms its timer only when the deadline is earlier than the one
-- armed, so a thousand claims a second cost it a comparison each.
-- A row trigger with a WHEN clause: the condition is checked without
-- calling the function, so inserts and updates of rows that are not leased
-- (a park's awaiting_human job, a requeue, a settle) cost nothing; a
-- statement trigger with a transition table cost bench/tap's parks about
-- 15% (the table captured and the function called for every park).
-- Heartbeats notify too (a later deadline: ignored). The function never
-- raises: a worker's claim must not fail on reaper's account.
CREATE FUNCTION job_lease_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF isfinite(NEW.lease_expires_at) THEN
        PERFORM pg_notify('reaper_lease_' || TG_RELID::text,
                          floor(extract(epoch FROM NEW.lease_expires_at) * 1000)::bigint::text);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER job_lease_notify AFTER INSERT OR UPDATE OF state, lease_expires_at ON job
    FOR EACH ROW WHEN (NEW.state = 'leased' AND NEW.lease_expires_at IS NOT NULL)
    EXECUTE FUNCTION job_lease_notify();
