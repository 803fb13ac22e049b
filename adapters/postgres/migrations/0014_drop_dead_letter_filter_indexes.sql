-- reaper schema, version 14: version 12's indexes of the dead letters'
-- filters go again.
--
-- Version 12 indexed dead_letter (origin_queue, gate_id), (reason, gate_id)
-- and (queue, gate_id) for the `gates` filters and the answer sets' freeze.
-- Since version 13 both read those values from the gate row (copied there at
-- park time) through the open gates' partial indexes, so nothing reads these
-- three any more, while every park still paid for them: three more index
-- insertions for each dead letter of a storm. Dropping an index takes a
-- short ACCESS EXCLUSIVE lock on dead_letter (the tap's parks wait for it).
DROP INDEX IF EXISTS dead_letter_by_origin;
DROP INDEX IF EXISTS dead_letter_by_reason;
DROP INDEX IF EXISTS dead_letter_by_queue;
