-- Fenced locks (litejobs.lock): one row per key, held while it has not lapsed nor been released.
-- Statements are read by litejobs.sql; {db_now} is the lease clock, values bound parameters.
-- Each runs alone on the lock's own autocommit connection, so it is visible to every other
-- host as soon as it returns.

-- name: lock_acquire
-- prepared
-- Take the key when no one holds it (no row, a released row, a lapsed one): the new token is
-- drawn while the row is locked, so it is greater than any earlier holder's. When the key is
-- held, mark it contended (its release then wakes the waiters) and answer who holds it and
-- until when. One statement: the uncontended acquire is one round trip.
WITH taken AS (
    INSERT INTO litejobs_lock AS lock (
        key, token, host, pid, acquired_at, renewed_at, expires_at, released_at,
        contended
    ) VALUES (
        %(key)s, nextval('litejobs_lock_token'), %(host)s, %(pid)s, {db_now},
        {db_now}, {db_now} + %(ttl)s::interval, NULL, false
    )
    ON CONFLICT (key) DO UPDATE SET
        token = nextval('litejobs_lock_token'), host = EXCLUDED.host,
        pid = EXCLUDED.pid, acquired_at = EXCLUDED.acquired_at,
        renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at,
        released_at = NULL, contended = false
    WHERE lock.expires_at <= {db_now}
    RETURNING token
), busy AS (
    UPDATE litejobs_lock SET contended = true
    WHERE key = %(key)s AND NOT EXISTS (SELECT FROM taken)
    RETURNING host, pid, expires_at
)
SELECT taken.token, busy.host, busy.pid,
       extract(epoch FROM busy.expires_at - {db_now})::float8 AS expires_in
FROM (SELECT) AS one
LEFT JOIN taken ON true
LEFT JOIN busy ON true

-- name: lock_renew
-- prepared
-- Push the expiry of a lock still held under this token one ttl past now; nothing when it was
-- released, lapsed or taken over (the holder has lost it).
UPDATE litejobs_lock SET renewed_at = {db_now}, expires_at = {db_now} + %(ttl)s::interval
WHERE key = %(key)s AND token = %(token)s AND released_at IS NULL AND expires_at > {db_now}
RETURNING expires_at

-- name: lock_release
-- prepared
-- Release the lock held under this token: answers whether it had lapsed first, nothing when
-- another holder took it over. Wakes the waiters (NOTIFY litejobs_locks, the key) only when
-- one asked for the key meanwhile, and counts a lost lock (``lost``, or found lapsed or taken
-- over here) for good. One statement.
WITH released AS (
    UPDATE litejobs_lock AS lock
    SET released_at = {db_now}, expires_at = LEAST(lock.expires_at, {db_now})
    WHERE key = %(key)s AND token = %(token)s AND released_at IS NULL
    RETURNING expires_at < released_at AS lapsed, contended
), counted AS (
    INSERT INTO litejobs_lockcounter AS counter (name, count)
    SELECT 'lost', 1
    WHERE %(lost)s OR NOT EXISTS (SELECT FROM released WHERE NOT lapsed)
    ON CONFLICT (name) DO UPDATE SET count = counter.count + 1
)
SELECT lapsed,
       CASE WHEN contended THEN pg_notify('litejobs_locks', %(key)s) IS NOT NULL END AS woke
FROM released

-- name: lock_purge
-- Housekeeping: delete up to %(limit)s rows no block held since %(before)s.
DELETE FROM litejobs_lock
WHERE key IN (
    SELECT key FROM litejobs_lock WHERE expires_at < %(before)s
    ORDER BY expires_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)

-- name: lock_counts
-- The locks held now and the lost ones counted for good (the metrics).
SELECT (
    SELECT count(*) FROM litejobs_lock WHERE released_at IS NULL AND expires_at > {db_now}
) AS held,
COALESCE((SELECT count FROM litejobs_lockcounter WHERE name = 'lost'), 0) AS lost
