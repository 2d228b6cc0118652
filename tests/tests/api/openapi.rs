//! The OpenAPI document: served, current in docs/openapi.json, and in step
//! with the filters the handlers accept.

use std::collections::BTreeSet;

use i9_api::{
    list::FilterSpec,
    routes::{eins, employees, groups, i9s, openapi, roles, users},
};
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
    let accepted = |specs: &[FilterSpec]| -> BTreeSet<String> {
        specs
            .iter()
            .map(|s| s.name.to_owned())
            .chain(["page".to_owned(), "page_size".to_owned()])
            .collect()
    };
    for (path, specs) in COLLECTIONS {
        assert_eq!(documented(path), accepted(specs), "{path}");
    }
}

/// Every collection: its path and the filters its handler accepts.
const COLLECTIONS: [(&str, &[FilterSpec]); 7] = [
    ("/v1/employees", employees::FILTERS),
    ("/v1/i9s", i9s::FILTERS),
    ("/v1/eins", eins::FILTERS),
    ("/v1/groups", groups::FILTERS),
    ("/v1/groups/{id}/users", groups::USER_FILTERS),
    ("/v1/users", users::FILTERS),
    ("/v1/roles", roles::FILTERS),
];

/// Every date filter is documented as the body dates are: the pattern of
/// `YYYY-MM-DD` or `MM/DD/YYYY` in the years 1900 to 2099, and no
/// `format: date` (which refuses `MM/DD/YYYY`); and no parameter of the
/// document is a `format: date` string (HR trial: `dateOfBirth`,
/// `startDate` and `i9Expiration` were).
#[test]
fn every_date_parameter_carries_the_date_pattern() {
    use i9_api::list::FilterKind;
    use i9_common::domain::fields::date_pattern;
    let doc = serde_json::to_value(openapi::document()).unwrap();
    let mut dates = 0;
    for (path, specs) in COLLECTIONS {
        for spec in specs
            .iter()
            .filter(|s| matches!(s.kind, FilterKind::Date(_)))
        {
            let param = doc["paths"][path]["get"]["parameters"]
                .as_array()
                .and_then(|a| a.iter().find(|p| p["name"] == spec.name))
                .unwrap_or_else(|| panic!("{path}: {} documented", spec.name));
            let schema = &param["schema"];
            assert_eq!(schema["type"], "string", "{path} {}", spec.name);
            assert_eq!(
                schema["pattern"].as_str(),
                Some(date_pattern().as_str()),
                "{path} {}: the date pattern",
                spec.name
            );
            assert!(
                schema.get("format").is_none(),
                "{path} {}: no format ({schema})",
                spec.name
            );
            dates += 1;
        }
    }
    assert!(
        dates >= 3,
        "dateOfBirth, startDate and i9Expiration at least"
    );
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for param in op["parameters"].as_array().into_iter().flatten() {
                let format = param["schema"]["format"].as_str().unwrap_or_default();
                assert!(
                    !format.starts_with("date"),
                    "{method} {path} {}: format {format}, not the date pattern",
                    param["name"]
                );
            }
        }
    }
}

/// Links and tools name operations by `operationId`: two operations under one
/// id made schemathesis follow links to the wrong one. And every JSON body is
/// closed, as the server refuses members it does not know (422).
#[test]
fn operation_ids_are_unique_and_json_bodies_are_closed() {
    let doc = serde_json::to_value(openapi::document()).unwrap();
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap_or_default().to_owned();
            assert!(
                ids.insert(id.clone()),
                "{method} {path}: operationId {id:?} repeated"
            );
            let Some(schema) =
                op["requestBody"]["content"]["application/json"]["schema"].as_object()
            else {
                continue;
            };
            let refs: Vec<&str> = std::iter::once(schema)
                .chain(
                    schema
                        .get("oneOf")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_object),
                )
                .filter_map(|s| s.get("$ref").and_then(Value::as_str))
                .collect();
            assert!(!refs.is_empty(), "{method} {path}: body is a component");
            for r in refs {
                let name = r.trim_start_matches("#/components/schemas/");
                assert_eq!(
                    doc["components"]["schemas"][name]["additionalProperties"],
                    Value::Bool(false),
                    "{method} {path}: {name} is closed"
                );
            }
        }
    }
}

/// The date and SSN patterns the document states accept exactly what the
/// server's parsers accept: every day of a leap and a common year and of a
/// century, both spellings, white space around, and near misses.
#[test]
fn the_date_and_ssn_patterns_are_the_parsers_rules() {
    use i9_common::domain::{
        fields::{date_pattern, ssn_pattern},
        parse_date, Ssn,
    };
    let date = regex::Regex::new(&date_pattern()).unwrap();
    let mut samples = vec![
        " 2026-01-05\t".to_owned(),
        "2026-1-05".to_owned(),
        "2026/01/05".to_owned(),
        "01/05/26".to_owned(),
        "09/0//5126".to_owned(),
        "".to_owned(),
    ];
    for year in [2024, 2023, 1900, 2000, 1899, 2096, 2099, 2100, 9999, 0] {
        for month in 0..=13 {
            for day in 0..=32 {
                samples.push(format!("{year:04}-{month:02}-{day:02}"));
                samples.push(format!("{month:02}/{day:02}/{year:04}"));
            }
        }
    }
    for s in &samples {
        assert_eq!(date.is_match(s), parse_date(s).is_ok(), "date {s:?}");
    }
    let ssn = regex::Regex::new(&ssn_pattern()).unwrap();
    for s in [
        "123-45-6789",
        " 123-45-6789 ",
        "000-45-6789",
        "666-45-6789",
        "665-45-6789",
        "667-45-6789",
        "900-45-6789",
        "899-45-6789",
        "123-00-6789",
        "123-45-0000",
        "123-45-0001",
        "001-01-0001",
        "123456789",
        "123-45-678",
    ] {
        assert_eq!(ssn.is_match(s), Ssn::parse(s.trim()).is_ok(), "ssn {s:?}");
    }
}
