-- reaper schema, version 8: the wedged queue (issue 18 item 4, WEDGED).
-- A queue is surfaced as WEDGED once it is seen wedged on
-- reap.wedged_checks consecutive checks. The count must survive a restart
-- and be shared by replicas, so it lives here, one row per subject (the
-- sighting subject: kind:<project>:<kind> for the job table); a check that
-- finds the subject healthy deletes its row (the count starts again).
CREATE TABLE wedge_check (
    subject     text        PRIMARY KEY,
    consecutive int         NOT NULL CHECK (consecutive >= 1),
    first_at    timestamptz NOT NULL DEFAULT now(),
    checked_at  timestamptz NOT NULL DEFAULT now()
);
-- The WEDGED check reads the newest completion per (project, kind).
CREATE INDEX job_succeeded_by_kind ON job (project_id, kind, finished_at)
    WHERE state = 'succeeded';
