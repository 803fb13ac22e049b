-- reaper schema, version 10: the broker half of the wedged queue and the
-- restart-loop breaker (issue 18 item 4, WEDGED / RESTARTED / RESTART_LOOP).
--
-- An owned queue is wedged when it has ready messages and consumers but
-- acked nothing for reap.wedged_seconds. When its ack counter last moved is
-- kept beside the counter readings of migration 9: acked_at is the read_at
-- (the reading replica's clock, in ms) of the reading at which the
-- cumulative ack counter moved (a reset counter above 0 counts as moved),
-- or of the first reading. Rows read before this version start from their
-- last reading.
ALTER TABLE queue_counter ADD COLUMN acked_at bigint;
UPDATE queue_counter SET acked_at = read_at;

-- The breaker's restarts of each subject (queue:<vhost>:<name>, the
-- sighting subject), at: the deciding replica's clock in ms. Decided and
-- written under the lock of the subject's wedge_check row, so replicas
-- decide one after the other; rows older than the window are pruned.
CREATE TABLE wedge_restart (
    subject text   NOT NULL,
    at      bigint NOT NULL,
    PRIMARY KEY (subject, at)
);
-- A RESTART_LOOP recorded for the current wedge: deleted with its row when
-- a healthy check resets the count (when the WEDGED sighting clears), so
-- the breaker may act again on the next wedge.
ALTER TABLE wedge_check ADD COLUMN looped_at timestamptz;
