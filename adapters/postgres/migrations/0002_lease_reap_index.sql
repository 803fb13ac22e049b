-- reaper schema, version 2: the lease reap's own index.
-- The reap takes expired leases lowest id first, each past the previous one
-- (id > after_id ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED). Over this
-- partial index that is a short forward scan from after_id among leased rows
-- only, whatever the table holds otherwise, so a pass costs one scan of the
-- leased rows in all rather than one scan of every expired lease per row
-- (job_leased_by_expiry would give the latter: range, then sort by id).
CREATE INDEX job_leased_by_id ON job (id) INCLUDE (lease_expires_at) WHERE state = 'leased';
