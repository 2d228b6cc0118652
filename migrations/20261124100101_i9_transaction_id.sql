-- `IntegrationTransactionId` per I-9: the id the service assigns to the
-- partner push that started the I-9 (docs/partners.md, "Transaction ids").
-- The push records it on its I-9 request, the worker copies it into the I-9,
-- and the I-9's status events read it from there. `employees` keeps the
-- latest push's. NULL for requests and I-9s not started by a partner push.
ALTER TABLE i9_requests ADD COLUMN integration_transaction_id TEXT;
ALTER TABLE i9s ADD COLUMN integration_transaction_id TEXT;

-- Until now only the employee kept the id, that of its latest push. That push
-- wrote its audit entry and its I-9 request in one transaction, so both carry
-- the transaction's time: the request made at the time of the employee's
-- latest partner audit entry is the one that push made. Earlier pushes' ids
-- are gone; their requests and I-9s stay NULL.
UPDATE i9_requests r SET integration_transaction_id = e.integration_transaction_id
FROM employees e
WHERE e.id = r.employee_id
  AND e.integration_transaction_id IS NOT NULL
  AND r.created_at = (SELECT max(a.occurred_at) FROM audit_log a
                      WHERE a.resource_type = 'employee' AND a.resource_id = e.id::TEXT
                        AND a.action IN ('partner.create', 'partner.rehire', 'partner.update'));

UPDATE i9s i SET integration_transaction_id = r.integration_transaction_id
FROM i9_requests r
WHERE r.i9_id = i.id AND r.integration_transaction_id IS NOT NULL;
