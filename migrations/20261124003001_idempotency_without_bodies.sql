-- Idempotency records keep what identifies a result, never the response: a
-- replay is rendered afresh under the caller's rights (api/src/idempotency.rs).
-- The stored bodies held full SSNs and live Section 1 links in clear.
--
-- Existing records stay replayable for the rest of their 24 hours: the
-- employee's id comes from the stored body, and the I-9 request whose link the
-- body carried is found by its token's hash (SHA-256, as `token_hash` computes
-- it). Then the bodies are dropped.

ALTER TABLE idempotency_keys
    ADD COLUMN resource_id BIGINT,
    ADD COLUMN section1_request_id UUID;

WITH bodies AS (
    SELECT user_id, idempotency_key, convert_from(response_body, 'UTF8')::JSONB AS body
    FROM idempotency_keys
    WHERE response_body IS NOT NULL
), outcomes AS (
    SELECT user_id, idempotency_key,
           CASE WHEN jsonb_typeof(body -> 'id') = 'number' THEN (body ->> 'id')::BIGINT END AS resource_id,
           substring(COALESCE(body ->> 'i9FormSection1Link', body ->> 'i9Section1Link')
                     FROM '/i9/section1/([A-Za-z0-9_-]+)$') AS token
    FROM bodies
)
UPDATE idempotency_keys k
SET resource_id = o.resource_id,
    section1_request_id = (SELECT r.id FROM i9_requests r
                           WHERE r.section1_token_hash = sha256(convert_to(o.token, 'UTF8')))
FROM outcomes o
WHERE k.user_id = o.user_id AND k.idempotency_key = o.idempotency_key;

ALTER TABLE idempotency_keys DROP COLUMN response_body;
