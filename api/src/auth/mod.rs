//! Bearer authentication of resource requests (RFC 6750), scopes and role
//! permissions, and the group visibility of decisions.md section 3.

use axum::{extract::FromRequestParts, http::request::Parts};
use i9_common::{
    crypto::token_hash,
    domain::{Permission, Scope, Scopes},
};
use sqlx::PgPool;

use crate::{error::ApiError, state::AppState};

pub mod cache;

/// The authenticated caller of a `/v1` request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: i64,
    pub client_id: i64,
    pub scopes: Scopes,
    permissions: u32,
    pub request_id: Option<String>,
}

impl Caller {
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

    /// The groups whose employees the caller may see: its own groups and
    /// their descendants; `None` when the role sees every group (permission 11).
    pub async fn visible_groups(&self, pool: &PgPool) -> Result<Visibility, ApiError> {
        if self.has(Permission::AllGroups) {
            return Ok(Visibility::All);
        }
        let ids: Vec<i64> = sqlx::query_scalar(
            "WITH RECURSIVE visible AS (
                 SELECT group_id AS id FROM user_groups WHERE user_id = $1
                 UNION
                 SELECT g.id FROM groups g JOIN visible v ON g.parent_id = v.id
             )
             SELECT id FROM visible",
        )
        .bind(self.user_id)
        .fetch_all(pool)
        .await?;
        Ok(Visibility::Groups(ids))
    }
}

/// Which groups' employees a caller may see.
#[derive(Debug, Clone)]
pub enum Visibility {
    All,
    Groups(Vec<i64>),
}

impl Visibility {
    pub fn sees(&self, group_id: i64) -> bool {
        match self {
            Visibility::All => true,
            Visibility::Groups(ids) => ids.contains(&group_id),
        }
    }

    /// Append `AND <column> = ANY(...)` when restricted.
    pub fn push_filter(&self, qb: &mut sqlx::QueryBuilder<'_, sqlx::Postgres>, column: &str) {
        if let Visibility::Groups(ids) = self {
            qb.push(format_args!(" AND {column} = ANY("));
            qb.push_bind(ids.clone());
            qb.push(")");
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
        let request_id = parts
            .headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(c) = state.auth_cache.get(&hash) {
            return Ok(Caller {
                user_id: c.user_id,
                client_id: c.client_id,
                scopes: c.scopes,
                permissions: c.permissions,
                request_id,
            });
        }
        let generation = state.auth_cache.generation();
        let row: Option<(i64, i64, Vec<String>, Vec<i16>, chrono::DateTime<chrono::Utc>)> = sqlx::query_as(
            "SELECT g.user_id, g.client_id, t.scopes,
                    ARRAY(SELECT rp.permission_id FROM role_permissions rp WHERE rp.role_id = u.role_id),
                    t.expires_at
             FROM access_tokens t
             JOIN oauth_grants g ON g.id = t.grant_id
             JOIN users u ON u.id = g.user_id
             JOIN oauth_clients c ON c.id = g.client_id
             WHERE t.token_hash = $1 AND t.expires_at > now()
               AND g.revoked_at IS NULL AND NOT u.retired AND c.active",
        )
        .bind(&hash)
        .fetch_optional(&state.pool)
        .await?;
        let (user_id, client_id, scopes, perms, token_expires) =
            row.ok_or(ApiError::Unauthorized)?;
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
                token_expires,
            },
            generation,
        );
        Ok(Caller {
            user_id,
            client_id,
            scopes,
            permissions,
            request_id,
        })
    }
}
