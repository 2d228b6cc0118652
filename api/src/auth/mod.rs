//! Bearer authentication of resource requests (RFC 6750), scopes and role
//! permissions, and what a caller reaches (docs/api.md, "Permissions and visibility"): the group
//! visibility of employees and I-9s, and the confinement of partner clients.

use axum::{
    extract::{FromRequestParts, MatchedPath},
    http::{request::Parts, Method},
};
use i9_common::{
    crypto::token_hash,
    domain::{Permission, Scope, Scopes},
};

use crate::{error::ApiError, state::AppState};

pub mod cache;

/// The authenticated caller of a `/v1` request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: i64,
    pub client_id: i64,
    pub scopes: Scopes,
    permissions: u32,
    /// The token was issued to a partner client (one registered with
    /// integration settings): it reaches only [`partner_reaches`], and of the
    /// employees only those created through that client (see [`Visibility`]).
    pub partner: bool,
    pub request_id: Option<String>,
}

/// Whether a partner client's token reaches `route` (the route template, e.g.
/// `/v1/employees/{id}`) with `method`: the partner operation and the list of
/// the groups it may hire into, reads of employees, I-9s and their E-Verify cases (narrowed to the
/// client's own by [`Visibility`]), and the API description. Nothing else, whatever the user's role: a route not
/// listed here, a new one included, is out of a partner's reach
/// (docs/partners.md, "What your token reaches").
pub fn partner_reaches(method: &Method, route: &str) -> bool {
    let read = *method == Method::GET || *method == Method::HEAD;
    match route {
        "/v1/employees"
        | "/v1/employees/{id}"
        | "/v1/i9s"
        | "/v1/i9s/{id}"
        | "/v1/i9s/{id}/everify"
        | "/v1/everify-cases"
        | "/v1/everify-cases/{caseId}"
        | "/v1/partners/locations"
        | "/v1/openapi.json" => read,
        "/v1/partners/i9s/section1" => *method == Method::POST,
        _ => false,
    }
}

impl Caller {
    /// The caller as the audit log names it.
    pub fn actor(&self) -> i9_common::models::Actor {
        i9_common::models::Actor {
            user_id: Some(self.user_id),
            client_id: Some(self.client_id),
            request_id: self.request_id.clone(),
        }
    }

    pub fn has(&self, permission: Permission) -> bool {
        self.permissions & (1 << permission.id()) != 0
    }

    /// The token must carry `scope` (403 `insufficient_scope`), then the
    /// role must hold `permission` (403).
    pub fn require(&self, scope: Scope, permission: Permission) -> Result<(), ApiError> {
        if !self.scopes.contains(scope) {
            return Err(ApiError::InsufficientScope(scope.as_str()));
        }
        if !self.has(permission) {
            return Err(ApiError::Forbidden(format!(
                "Your role lacks permission {} ({}).",
                permission.id(),
                permission_name(permission)
            )));
        }
        Ok(())
    }

    /// A partner client's token outside [`partner_reaches`]: a read answers
    /// 404, as for a record that does not exist; a write 403.
    fn confine(&self, method: &Method, route: Option<&str>) -> Result<(), ApiError> {
        if !self.partner || route.is_some_and(|r| partner_reaches(method, r)) {
            return Ok(());
        }
        if *method == Method::GET || *method == Method::HEAD {
            Err(ApiError::NotFound)
        } else {
            Err(ApiError::Forbidden(
                "A partner client's token may only call the partner operation; it reads the employees created through it, their I-9s and E-Verify cases, and nothing else.".into(),
            ))
        }
    }

    /// Which employees (and I-9s) the caller sees, and in which groups it may
    /// place employees. The user's visible groups are cached beside its token
    /// ([`cache::AuthCache::groups`]), dropped whenever groups change.
    pub async fn visibility(&self, state: &AppState) -> Result<Visibility, ApiError> {
        let client = self.partner.then_some(self.client_id);
        if self.has(Permission::AllGroups) {
            return Ok(Visibility {
                groups: Groups::All,
                client,
            });
        }
        if let Some(ids) = state.auth_cache.groups(self.user_id) {
            return Ok(Visibility {
                groups: Groups::Only(ids),
                client,
            });
        }
        let generation = state.auth_cache.generation();
        let ids: std::sync::Arc<[i64]> = sqlx::query_scalar!(
            r#"WITH RECURSIVE visible AS (
                 SELECT group_id AS id FROM user_groups WHERE user_id = $1
                 UNION
                 SELECT g.id FROM groups g JOIN visible v ON g.parent_id = v.id
             )
             SELECT id AS "id!" FROM visible"#,
            self.user_id,
        )
        .fetch_all(&state.pool)
        .await?
        .into();
        state
            .auth_cache
            .put_groups(self.user_id, ids.clone(), generation);
        Ok(Visibility {
            groups: Groups::Only(ids),
            client,
        })
    }
}

/// What a caller sees of the employees (and so of their I-9s), as
/// docs/api.md, "Permissions and visibility" says: those whose group is one of the user's groups or below one
/// (every group with permission 11); through a partner client, only those
/// created through that client among them, whatever the role. The groups
/// alone decide where the caller may place employees ([`Self::may_place_in`]).
#[derive(Debug, Clone)]
pub struct Visibility {
    groups: Groups,
    /// A partner client's id: only its own employees are seen.
    client: Option<i64>,
}

#[derive(Debug, Clone)]
enum Groups {
    All,
    Only(std::sync::Arc<[i64]>),
}

impl Visibility {
    /// Whether the caller sees an employee of group `location_id`, created
    /// through the partner client `created_by` (its `integration_client_id`).
    pub fn sees(&self, location_id: i64, created_by: Option<i64>) -> bool {
        self.may_place_in(location_id) && self.client.is_none_or(|c| created_by == Some(c))
    }

    /// Whether the caller sees every employee, whatever its group: no group
    /// limit (permission 11) and not a partner client's confinement. Only
    /// such a caller may set or lift a hold on a legal entity, which covers
    /// every employee of it (docs/retention.md, "Who may hold a legal
    /// entity").
    pub fn sees_all(&self) -> bool {
        matches!(self.groups, Groups::All) && self.client.is_none()
    }

    /// The groups whose employees the caller sees (`None`: every group), and
    /// the partner client it is confined to, if any: [`Self::sees`] as bound
    /// parameters of a query.
    pub fn as_params(&self) -> (Option<Vec<i64>>, Option<i64>) {
        let groups = match &self.groups {
            Groups::All => None,
            Groups::Only(ids) => Some(ids.to_vec()),
        };
        (groups, self.client)
    }

    /// Whether the caller may create an employee in (or move one to) `group`;
    /// also whether it sees that group's employees, apart from a partner's
    /// confinement (a group's `managed`).
    pub fn may_place_in(&self, group: i64) -> bool {
        match &self.groups {
            Groups::All => true,
            Groups::Only(ids) => ids.contains(&group),
        }
    }

    /// A condition on the group column `column` that holds for the groups
    /// [`Self::may_place_in`] allows.
    pub fn push_group_condition(
        &self,
        qb: &mut sqlx::QueryBuilder<'_, sqlx::Postgres>,
        column: &str,
    ) {
        match &self.groups {
            Groups::All => qb.push("TRUE"),
            Groups::Only(ids) => qb
                .push(format_args!("{column} = ANY("))
                .push_bind(ids.to_vec())
                .push(")"),
        };
    }

    /// A condition that holds for the employees `employee` (an alias of
    /// `employees`) that the caller sees: [`Self::sees`] in SQL.
    pub fn push_condition(&self, qb: &mut sqlx::QueryBuilder<'_, sqlx::Postgres>, employee: &str) {
        self.push_group_condition(qb, &format!("{employee}.location_id"));
        if let Some(client) = self.client {
            qb.push(format_args!(" AND {employee}.integration_client_id = "))
                .push_bind(client);
        }
    }
}

pub fn permission_name(p: Permission) -> &'static str {
    match p {
        Permission::ViewEmployees => "view employees",
        Permission::EditEmployees => "create and update employees",
        Permission::ViewI9s => "view I-9s",
        Permission::WorkOnI9s => "work on I-9s",
        Permission::ApproveI9s => "approve I-9s",
        Permission::ViewLegalEntities => "view legal entities",
        Permission::ViewGroups => "view groups and the users of a group",
        Permission::ViewUsers => "view users",
        Permission::ViewRoles => "view roles",
        Permission::PartnerOperation => "the integrated partner operation",
        Permission::AllGroups => "see employees of every group",
        Permission::FullSsn => "see full social security numbers",
    }
}

fn bearer_token(parts: &Parts) -> Option<&str> {
    let value = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && token.len() <= 200)
        .then_some(token)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = bearer_token(parts).ok_or(ApiError::Unauthorized)?;
        let hash = token_hash(token);
        let request_id = crate::middleware::request_id(&parts.headers);
        let route = parts
            .extensions
            .get::<MatchedPath>()
            .map(|p| p.as_str().to_owned());
        let caller = Self::authenticate(state, hash, request_id).await?;
        caller.confine(&parts.method, route.as_deref())?;
        Ok(caller)
    }
}

/// A live access token: its sign-in's user and client, its scopes, the
/// user's role's permissions, when it expires, and whether the client is a
/// partner.
struct TokenRow {
    user_id: i64,
    client_id: i64,
    scopes: Vec<String>,
    permissions: Vec<i16>,
    expires_at: chrono::DateTime<chrono::Utc>,
    partner: bool,
}

impl Caller {
    async fn authenticate(
        state: &AppState,
        hash: Vec<u8>,
        request_id: Option<String>,
    ) -> Result<Self, ApiError> {
        if let Some(c) = state.auth_cache.get(&hash) {
            return Ok(Caller {
                user_id: c.user_id,
                client_id: c.client_id,
                scopes: c.scopes,
                permissions: c.permissions,
                partner: c.partner,
                request_id,
            });
        }
        let generation = state.auth_cache.generation();
        let TokenRow {
            user_id,
            client_id,
            scopes,
            permissions: perms,
            expires_at: token_expires,
            partner,
        } = sqlx::query_as!(
            TokenRow,
            r#"SELECT g.user_id, g.client_id, t.scopes,
                    ARRAY(SELECT rp.permission_id FROM role_permissions rp WHERE rp.role_id = u.role_id)
                      AS "permissions!",
                    t.expires_at, c.integration_client_system IS NOT NULL AS "partner!"
             FROM access_tokens t
             JOIN oauth_grants g ON g.id = t.grant_id
             JOIN users u ON u.id = g.user_id
             JOIN oauth_clients c ON c.id = g.client_id
             WHERE t.token_hash = $1 AND t.expires_at > now()
               AND g.revoked_at IS NULL AND NOT u.retired AND c.active"#,
            &hash,
        )
        .fetch_optional(&state.pool)
        .await?
        .ok_or(ApiError::Unauthorized)?;
        let permissions = perms
            .into_iter()
            .filter(|p| (1..=31).contains(p))
            .fold(0u32, |acc, p| acc | (1 << p));
        let scopes = Scopes::from_list(&scopes).unwrap_or_default();
        state.auth_cache.put(
            hash,
            cache::Cached {
                user_id,
                client_id,
                scopes,
                permissions,
                partner,
                token_expires,
            },
            generation,
        );
        Ok(Caller {
            user_id,
            client_id,
            scopes,
            permissions,
            partner,
            request_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partner_reaches_its_operation_its_locations_and_reads_of_employees_and_i9s_only() {
        for (method, route, reaches) in [
            (Method::POST, "/v1/partners/i9s/section1", true),
            (Method::GET, "/v1/employees", true),
            (Method::HEAD, "/v1/employees/{id}", true),
            (Method::GET, "/v1/i9s/{id}", true),
            (Method::GET, "/v1/openapi.json", true),
            (Method::GET, "/v1/partners/locations", true),
            (Method::POST, "/v1/partners/locations", false),
            (Method::PATCH, "/v1/employees/{id}", false),
            (Method::POST, "/v1/employees", false),
            (Method::POST, "/v1/i9s/{id}/park", false),
            (Method::GET, "/v1/partners/i9s/section1", false),
            (Method::GET, "/v1/eins", false),
            (Method::GET, "/v1/groups/{id}/users", false),
            (Method::GET, "/v1/users/{id}", false),
            (Method::GET, "/v1/roles", false),
            (Method::GET, "/v1/employees/{id}/periods", false),
            (Method::GET, "/v1/employees/{id}/history", false),
            (Method::GET, "/v1/i9s/{id}/history", false),
            (Method::POST, "/v1/i9s/{id}/section1-link", false),
            (Method::GET, "/v1/something-added-later", false),
        ] {
            assert_eq!(partner_reaches(&method, route), reaches, "{method} {route}");
        }
    }
}
