-- The audit log is append-only history: it must outlive the rows it names
-- and must not make every write probe users and clients again (the write has
-- just authenticated both). Ids stay, without foreign keys.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_user_id_fkey;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_client_id_fkey;
