-- reaper schema, version 7: how long a job has been held (issue #18, STALLED).
-- A worker that keeps heartbeating keeps its lease alive however long it
-- holds the job, so lease_expires_at says nothing about the hold. claimed_at
-- is when the row last became leased: set by this trigger, never by a
-- worker, so workers need no change. A heartbeat (an UPDATE that leaves the
-- row leased by the same owner) does not move it; a claim by another owner
-- (a lease taken over) starts a new hold; any state but leased clears it.
-- A BEFORE row trigger with a WHEN clause: rows that neither are nor were
-- leased (parks, settles of other rows) do not call the function. The
-- function never raises: a worker's claim must not fail on reaper's account.
ALTER TABLE job ADD COLUMN claimed_at timestamptz;
-- Rows leased when this migration runs have been held since at least now.
UPDATE job SET claimed_at = now() WHERE state = 'leased';
CREATE FUNCTION job_claimed_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state <> 'leased' THEN
        NEW.claimed_at := NULL;
    ELSIF TG_OP = 'INSERT' OR OLD.state IS DISTINCT FROM 'leased'
          OR OLD.lease_owner IS DISTINCT FROM NEW.lease_owner OR OLD.claimed_at IS NULL THEN
        NEW.claimed_at := now();
    ELSE
        NEW.claimed_at := OLD.claimed_at;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER job_claimed_at BEFORE INSERT OR UPDATE ON job
    FOR EACH ROW WHEN (NEW.state = 'leased' OR NEW.claimed_at IS NOT NULL)
    EXECUTE FUNCTION job_claimed_at();
-- The STALLED check reads leased rows by how long they are held.
CREATE INDEX job_leased_by_claim ON job (claimed_at) WHERE state = 'leased';
