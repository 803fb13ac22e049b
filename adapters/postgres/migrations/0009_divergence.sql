-- reaper schema, version 9: divergent queues (issue #18 item 3, DIVERGENT).
--
-- Job table: completions are rows that reached `succeeded` in the window.
-- finished_at is written by workers (not all do, and they write it on
-- failure too), and updated_at moves on any later update, so neither says
-- when a row succeeded. succeeded_at is set by this trigger when a row
-- becomes succeeded, so workers need no change; any other state clears it
-- (a row that fails, is retried and succeeds counts once, when it
-- succeeds). An explicit value on an INSERT, or on an UPDATE that keeps the
-- row succeeded, is kept (backfills, tests).
ALTER TABLE job ADD COLUMN succeeded_at timestamptz;
UPDATE job SET succeeded_at = coalesce(finished_at, updated_at) WHERE state = 'succeeded';
CREATE FUNCTION job_succeeded_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state <> 'succeeded' THEN
        NEW.succeeded_at := NULL;
    ELSIF TG_OP = 'INSERT' THEN
        NEW.succeeded_at := coalesce(NEW.succeeded_at, now());
    ELSIF OLD.state IS DISTINCT FROM 'succeeded' THEN
        NEW.succeeded_at := now();
    ELSE
        NEW.succeeded_at := coalesce(NEW.succeeded_at, OLD.succeeded_at, now());
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER job_succeeded_at BEFORE INSERT OR UPDATE ON job
    FOR EACH ROW WHEN (NEW.state = 'succeeded' OR NEW.succeeded_at IS NOT NULL)
    EXECUTE FUNCTION job_succeeded_at();
-- Intake and completions over the window are range scans.
CREATE INDEX job_by_created ON job (created_at);
CREATE INDEX job_succeeded_by_time ON job (succeeded_at) WHERE succeeded_at IS NOT NULL;

-- Broker: an owned queue's cumulative message_stats publish and ack
-- counters, as last read by any replica (read_at: the reading replica's
-- clock, in ms), and the increments between readings. A reading older than
-- the stored one (another replica read later and wrote first) adds
-- nothing; a counter lower than the stored one was reset (the broker or
-- the queue restarted) and counts from zero. The row lock on
-- queue_counter serialises replicas, so an increment is counted once.
CREATE TABLE queue_counter (
    vhost     text   NOT NULL,
    queue     text   NOT NULL,
    published bigint NOT NULL,
    acked     bigint NOT NULL,
    read_at   bigint NOT NULL,
    PRIMARY KEY (vhost, queue)
);
CREATE TABLE queue_increment (
    vhost     text        NOT NULL,
    queue     text        NOT NULL,
    at        timestamptz NOT NULL,
    published bigint      NOT NULL CHECK (published >= 0),
    acked     bigint      NOT NULL CHECK (acked >= 0)
);
CREATE INDEX queue_increment_by_queue ON queue_increment (vhost, queue, at);
CREATE INDEX queue_increment_by_at ON queue_increment (at);
