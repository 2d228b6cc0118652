//! The OpenAPI 3.1 document, generated from the handlers and types above so
//! it cannot drift from them. Served at `/v1/openapi.json`; a copy is kept in
//! `docs/openapi.json` (a test checks that it is current).

use axum::Json;
use utoipa::{
    openapi::security::{Flow, OAuth2, Password, Scopes, SecurityScheme},
    Modify, OpenApi,
};

use super::{eins, employees, groups, health, i9_steps, i9s, oauth, partners, roles, users};
use crate::{auth::Caller, error};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Employment eligibility records service",
        version = "1",
        description = "Employees, electronic Form I-9 records, legal entities, groups, users and roles. \
            Every /v1 route needs an OAuth 2.0 bearer token. Errors are RFC 9457 problem details. \
            See docs/api.md for the conventions (paging, filters, dates, permissions)."
    ),
    paths(
        oauth::token,
        employees::list, employees::get_one, employees::write::create, employees::write::update,
        i9s::list, i9s::get_one, partners::section1, i9_steps::section2, i9_steps::complete, i9_steps::approve, i9_steps::park,
        eins::list, eins::get_one,
        groups::list, groups::get_one, groups::users,
        users::list, users::get_one,
        roles::list, roles::get_one,
        health::healthz, health::readyz, health::metrics,
        openapi_json,
    ),
    components(schemas(error::Problem, error::FieldError)),
    modifiers(&Security)
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "oauth2",
            SecurityScheme::OAuth2(OAuth2::new([Flow::Password(Password::new(
                "/oauth2/access_token",
                Scopes::from_iter([
                    ("read", "GET requests"),
                    ("write", "POST and PATCH requests"),
                ]),
            ))])),
        );
    }
}

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

#[utoipa::path(
    get, path = "/v1/openapi.json", tag = "operations",
    responses((status = 200, description = "This document"), (status = 401, body = error::Problem, content_type = "application/problem+json")),
    security(("oauth2" = []))
)]
pub async fn openapi_json(_caller: Caller) -> Json<utoipa::openapi::OpenApi> {
    Json(document())
}
