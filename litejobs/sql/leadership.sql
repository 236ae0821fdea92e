-- Leader leases (LeaderLease): the one scheduler that plans, the one relay that publishes.
-- Statements are read by litejobs.sql; {db_now} is the lease clock, values bound parameters.

-- name: lead
-- Take a role's leader lease when it is free or lapsed, or renew it when it is ours; answers
-- its fence (a new one whenever the leader changes), nothing when another process leads. Run
-- first in a transaction, the row lock holds a takeover off until that transaction ends. The
-- expiry is the database's clock ({db_now}), so replicas whose clocks disagree agree on it.
INSERT INTO litejobs_leaderlease AS lease (
    name, owner, host, pid, fence, acquired_at, renewed_at, expires_at
) VALUES (
    %(role)s, %(owner)s, %(host)s, %(pid)s, nextval('litejobs_fence'), {db_now}, {db_now},
    {db_now} + %(lease)s::interval
)
ON CONFLICT (name) DO UPDATE SET
    owner = EXCLUDED.owner, host = EXCLUDED.host, pid = EXCLUDED.pid,
    fence = CASE WHEN lease.owner = EXCLUDED.owner THEN lease.fence ELSE EXCLUDED.fence END,
    acquired_at = CASE WHEN lease.owner = EXCLUDED.owner THEN lease.acquired_at
                       ELSE EXCLUDED.acquired_at END,
    renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at
WHERE lease.owner = EXCLUDED.owner OR lease.expires_at < {db_now}
RETURNING fence

-- name: still_leader
-- Inside a transaction: the role's lease is still ours under this fence. FOR SHARE holds off
-- a takeover until the transaction commits, so a deposed leader never writes as leader.
SELECT fence FROM litejobs_leaderlease
WHERE name = %(role)s AND owner = %(owner)s AND fence = %(fence)s AND expires_at >= {db_now}
FOR SHARE

-- name: resign
-- A leader stopping cleanly (or stepping aside) hands its lease on at once.
UPDATE litejobs_leaderlease SET expires_at = {db_now} - interval '1 second'
WHERE name = %(role)s AND owner = %(owner)s
