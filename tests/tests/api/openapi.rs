//! The OpenAPI document: served, current in docs/openapi.json, and in step
//! with the filters the handlers accept.

use std::collections::BTreeSet;

use i9_api::routes::{eins, employees, groups, i9s, openapi, roles, users};
use i9_tests::{spawn_app, ADMIN};
use serde_json::Value;

#[tokio::test]
async fn the_document_is_served_and_describes_every_route() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let doc = app.get_json("/v1/openapi.json", &token).await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths: BTreeSet<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for p in [
        "/oauth2/access_token",
        "/v1/employees",
        "/v1/employees/{id}",
        "/v1/i9s",
        "/v1/i9s/{id}",
        "/v1/eins",
        "/v1/eins/{id}",
        "/v1/groups",
        "/v1/groups/{id}",
        "/v1/groups/{id}/users",
        "/v1/users",
        "/v1/users/{user_id}",
        "/v1/roles",
        "/v1/roles/{role_id}",
        "/healthz",
        "/readyz",
        "/metrics",
        "/v1/openapi.json",
    ] {
        assert!(paths.contains(p), "{p} documented");
    }
    assert!(doc["components"]["securitySchemes"]["oauth2"].is_object());
}

#[test]
fn the_committed_copy_is_current() {
    let generated = serde_json::to_value(openapi::document()).unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("docs/openapi.json exists"))
            .expect("docs/openapi.json is JSON");
    assert!(
        generated == committed,
        "docs/openapi.json is stale: run `cargo run -q -p i9-admin -- openapi > docs/openapi.json`"
    );
}

#[test]
fn documented_query_parameters_are_exactly_the_accepted_ones() {
    let doc = serde_json::to_value(openapi::document()).unwrap();
    let documented = |path: &str| -> BTreeSet<String> {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|p| p["in"] == "query")
                    .map(|p| p["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let accepted = |specs: &[i9_api::list::FilterSpec]| -> BTreeSet<String> {
        specs
            .iter()
            .map(|s| s.name.to_owned())
            .chain(["page".to_owned(), "page_size".to_owned()])
            .collect()
    };
    assert_eq!(documented("/v1/employees"), accepted(employees::FILTERS));
    assert_eq!(documented("/v1/i9s"), accepted(i9s::FILTERS));
    assert_eq!(documented("/v1/eins"), accepted(eins::FILTERS));
    assert_eq!(documented("/v1/groups"), accepted(groups::FILTERS));
    assert_eq!(
        documented("/v1/groups/{id}/users"),
        accepted(groups::USER_FILTERS)
    );
    assert_eq!(documented("/v1/users"), accepted(users::FILTERS));
    assert_eq!(documented("/v1/roles"), accepted(roles::FILTERS));
}
