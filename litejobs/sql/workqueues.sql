-- Human work queues' items: each change is one conditional statement that PostgreSQL re-checks
-- on the row's latest version under its row lock, so two people never both hold one item.
-- A claim is a lease: every statement compares claim_expires_at with {db_now} (the database's
-- clock unless a test clock supplies it), so an expired claim is no claim anywhere. Each
-- answers the whole row (RETURNING *), which litejobs maps to a WorkItem by column name.

-- name: workitem_enqueue
-- Put a row in a queue, or rescore its live item (which keeps its claim).
INSERT INTO litejobs_workitem (queue, content_type_id, object_id, tenant, score, score_inputs,
                               score_rule, scored_at, state, created_at)
VALUES (%(queue)s, %(content_type)s, %(object_id)s, %(tenant)s, %(score)s, %(inputs)s::jsonb,
        %(rule)s, %(now)s, 'open', %(now)s)
ON CONFLICT (queue, content_type_id, object_id) WHERE state IN ({live_items})
DO UPDATE SET score = EXCLUDED.score, score_inputs = EXCLUDED.score_inputs,
              score_rule = EXCLUDED.score_rule, scored_at = EXCLUDED.scored_at
RETURNING *, (xmax = 0) AS inserted

-- name: workitem_claim
-- A claim of one item; a claim by the holder renews it (a new expiry, the same claimed_at).
UPDATE litejobs_workitem SET
    state = 'claimed',
    claimed_by_id = %(user_id)s,
    claimed_by_name = %(user_name)s,
    claimed_at = CASE WHEN state = 'claimed' AND claimed_by_id = %(user_id)s
                       AND claim_expires_at > {db_now} THEN claimed_at ELSE %(now)s END,
    claim_expires_at = {db_now} + %(lease)s::interval
WHERE id = %(id)s AND queue = %(queue)s AND state IN ({live_items})
  AND (state = 'open' OR claim_expires_at <= {db_now} OR claimed_by_id = %(user_id)s)
RETURNING *

-- name: workitem_claim_next
-- The first unclaimed item in listing order (of one tenant, when given); SKIP LOCKED lets two
-- people take two items.
UPDATE litejobs_workitem SET
    state = 'claimed', claimed_by_id = %(user_id)s, claimed_by_name = %(user_name)s,
    claimed_at = %(now)s, claim_expires_at = {db_now} + %(lease)s::interval
WHERE id = (
    SELECT id FROM litejobs_workitem
    WHERE queue = %(queue)s AND state IN ({live_items})
      AND (state = 'open' OR claim_expires_at <= {db_now})
      AND (%(tenant)s::text IS NULL OR tenant = %(tenant)s)
    ORDER BY score * -1, created_at, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
) AND state IN ({live_items}) AND (state = 'open' OR claim_expires_at <= {db_now})
RETURNING *

-- name: workitem_release
-- The holder gives up a live claim: the item is open to everyone at once.
UPDATE litejobs_workitem SET
    state = 'open', claimed_by_id = NULL, claimed_by_name = '', claimed_at = NULL,
    claim_expires_at = NULL
WHERE id = %(id)s AND queue = %(queue)s AND state = 'claimed'
  AND claimed_by_id = %(user_id)s AND claim_expires_at > {db_now}
RETURNING *

-- name: workitem_finish
-- Resolve or cancel a live item, if the queue's claim mode lets the acting user: `required`
-- needs their live claim, `optional` that nobody else holds one; otherwise (no claims, or code
-- acting rather than a person) nothing more.
UPDATE litejobs_workitem SET
    state = %(state)s, resolution = %(resolution)s, resolution_note = %(note)s,
    resolved_by_id = %(user_id)s, resolved_by_name = %(user_name)s, resolved_at = %(now)s,
    claimed_by_id = NULL, claimed_by_name = '', claimed_at = NULL, claim_expires_at = NULL
WHERE id = %(id)s AND queue = %(queue)s AND state IN ({live_items})
  AND CASE %(claim)s
        WHEN 'required' THEN state = 'claimed' AND claimed_by_id = %(user_id)s
                             AND claim_expires_at > {db_now}
        WHEN 'optional' THEN state = 'open' OR claim_expires_at <= {db_now}
                             OR claimed_by_id IS NOT DISTINCT FROM %(user_id)s
        ELSE TRUE
      END
RETURNING *

-- name: workitem_rescore
-- A live item's score, computed again by its queue's rule.
UPDATE litejobs_workitem SET score = %(score)s, score_inputs = %(inputs)s::jsonb,
    score_rule = %(rule)s, scored_at = %(now)s
WHERE id = %(id)s AND queue = %(queue)s AND state IN ({live_items})
RETURNING *

-- name: workitem_purge
-- One bounded batch of finished items resolved before the retention.
DELETE FROM litejobs_workitem WHERE id IN (
    SELECT id FROM litejobs_workitem
    WHERE state IN ({finished_items}) AND resolved_at < %(before)s
    LIMIT %(batch)s
)
