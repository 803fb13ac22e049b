-- reaper schema, version 5: replicas never double-act on a gate (issue #15).
-- A replay publishes to the broker between two transactions, so the gate
-- row lock alone cannot keep two reaperd processes from publishing the
-- same dead letter twice. Before it publishes, a replay claims the gate:
-- under the gate's row lock it records who claims it (claimed_by: the
-- process's instance id, host:pid:start) and when (claimed_at), and
-- commits. While the claim is there the gate is "replaying": every other
-- answer, from any process, is refused `busy` and changes nothing. The
-- settle (answer, job, ledger event) clears the claim in the same
-- transaction, fenced on it; a failed publish clears it too. A claim older
-- than control.replay_claim_seconds is stale (its process is gone or
-- stuck): the next answer takes it over and reports it (rp_gate.h).
ALTER TABLE gate ADD COLUMN claimed_by text, ADD COLUMN claimed_at timestamptz,
    ADD CONSTRAINT gate_claim_whole CHECK ((claimed_by IS NULL) = (claimed_at IS NULL));
