-- API processes cache validated access tokens for a few seconds. Any change
-- that could revoke or narrow one (a revoked sign-in, a retired user, a
-- deactivated client, a role's permissions, a token's expiry) tells every
-- process to drop its cache at once.
CREATE FUNCTION notify_auth_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('i9_auth', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER users_auth_change AFTER UPDATE OR DELETE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER oauth_grants_auth_change AFTER UPDATE OR DELETE ON oauth_grants
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER oauth_clients_auth_change AFTER UPDATE OR DELETE ON oauth_clients
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER role_permissions_auth_change AFTER INSERT OR UPDATE OR DELETE ON role_permissions
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER access_tokens_auth_change AFTER UPDATE OR DELETE ON access_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
