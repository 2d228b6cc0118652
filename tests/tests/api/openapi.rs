//! The OpenAPI document: served, current in docs/openapi.json, and in step
//! with the filters the handlers accept.

use std::collections::BTreeSet;

use i9_api::{
    list::FilterSpec,
    routes::{eins, employees, everify, groups, i9s, openapi, partners, roles, users},
};
use i9_tests::{spawn_app, ADMIN, ATS_BOT};
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
const COLLECTIONS: [(&str, &[FilterSpec]); 12] = [
    ("/v1/employees", employees::FILTERS),
    ("/v1/i9s", i9s::FILTERS),
    ("/v1/eins", eins::FILTERS),
    ("/v1/groups", groups::FILTERS),
    ("/v1/groups/{id}/users", groups::USER_FILTERS),
    ("/v1/users", users::FILTERS),
    ("/v1/roles", roles::FILTERS),
    ("/v1/partners/locations", partners::LOCATION_FILTERS),
    ("/v1/everify-cases", everify::FILTERS),
    // Paged lists without filters.
    ("/v1/employees/{id}/periods", &[]),
    ("/v1/employees/{id}/history", &[]),
    ("/v1/i9s/{id}/history", &[]),
];

/// Every collection declares what docs/api.md, "Lists" and "CSV" promise of
/// each: a 200 of a `ListResponse` (`searchResult`, `total`, `links`, all
/// required) as `application/json` and the same list as `text/csv`, and the
/// 406 of an `Accept` allowing neither.
#[test]
fn every_collection_declares_its_total_csv_and_406() {
    let doc = serde_json::to_value(openapi::document()).unwrap();
    for (path, _) in COLLECTIONS {
        let responses = &doc["paths"][path]["get"]["responses"];
        let content = &responses["200"]["content"];
        let reference = content["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap_or_else(|| panic!("{path}: a JSON list ({content})"));
        let name = reference.rsplit('/').next().unwrap();
        assert!(name.starts_with("ListResponse_"), "{path}: {name}");
        let schema = &doc["components"]["schemas"][name];
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(required, ["links", "searchResult", "total"], "{path}");
        assert_eq!(schema["properties"]["total"]["minimum"], 0, "{path}");
        assert_eq!(
            content["text/csv"]["schema"]["type"], "string",
            "{path}: CSV declared"
        );
        assert_eq!(
            responses["406"]["content"]["application/problem+json"]["schema"]["$ref"],
            "#/components/schemas/Problem",
            "{path}: 406 declared"
        );
    }
}

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

/// What the document says of email addresses (`EMAIL_RULES`, in each email
/// field's description, and `EMAIL_PATTERN`) is what the server's parser
/// does: every address it accepts matches the pattern, and each rule
/// refuses what it says it refuses.
#[test]
fn the_email_rules_are_the_parsers() {
    use i9_common::domain::fields::{Email, EMAIL_PATTERN};
    let pattern = regex::Regex::new(EMAIL_PATTERN).unwrap();
    let ok = |s: &str| Email::<255>::parse(s).is_ok();
    for s in [
        "ana@example.com".to_owned(),
        " ana@example.com\t".to_owned(),
        "jörg@bücher.de".to_owned(),
        "ana.müller@example.de".to_owned(),
        format!("{}@example.com", "a".repeat(64)),
        format!("ana@{}.com", "b".repeat(63)),
        // 32 characters, 64 bytes.
        format!("{}@example.com", "é".repeat(32)),
        // A domain of 254 bytes.
        format!("a@{}.de", vec!["ü".repeat(31); 4].join(".")),
    ] {
        assert!(ok(&s), "{s:?} accepted");
        assert!(pattern.is_match(&s), "{s:?} matches the pattern");
    }
    for s in [
        "ana@localhost".to_owned(),
        "ana@example".to_owned(),
        format!("{}@example.com", "a".repeat(65)),
        // 33 characters, 66 bytes.
        format!("{}@example.com", "é".repeat(33)),
        format!("ana@{}.com", "b".repeat(64)),
        // A domain of 258 bytes in 134 characters.
        format!("a@{}.de", vec![format!("{}b", "ü".repeat(31)); 4].join(".")),
        "ana@-example.com".to_owned(),
        "ana@example-.com".to_owned(),
        "€@example.com".to_owned(),
        "ana@exa€mple.com".to_owned(),
        "\u{1F600}@example.com".to_owned(),
        "ana example.com".to_owned(),
    ] {
        assert!(!ok(&s), "{s:?} refused");
    }
    // The blank branch's, not the address's: the two are exclusive.
    for blank in ["", " ", "\t\n"] {
        assert!(!pattern.is_match(blank), "{blank:?} does not match");
    }
}

/// Whether `schema` accepts `value` (a blank string or null), reading only
/// what decides that for such a value: `$ref`, `type`, `enum`, `pattern`,
/// `minLength` and the combinators. `format` is not asserted, as JSON Schema
/// validators by default do not assert it.
fn accepts(doc: &Value, schema: &Value, value: &Value) -> bool {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.trim_start_matches("#/components/schemas/");
        return accepts(doc, &doc["components"]["schemas"][name], value);
    }
    let type_ok = match &schema["type"] {
        Value::Null => true,
        Value::String(t) => json_type(value) == t,
        Value::Array(ts) => ts.iter().any(|t| t == json_type(value)),
        other => panic!("type {other}"),
    };
    let enum_ok = schema["enum"]
        .as_array()
        .is_none_or(|choices| choices.contains(value));
    let string_ok = match value.as_str() {
        None => true,
        Some(s) => {
            schema["pattern"]
                .as_str()
                .is_none_or(|p| regex::Regex::new(p).unwrap().is_match(s))
                && schema["minLength"]
                    .as_u64()
                    .is_none_or(|min| s.chars().count() as u64 >= min)
        }
    };
    let all = |k: &str| {
        schema[k]
            .as_array()
            .is_none_or(|a| a.iter().all(|s| accepts(doc, s, value)))
    };
    let any = |k: &str| {
        schema[k]
            .as_array()
            .is_none_or(|a| a.iter().any(|s| accepts(doc, s, value)))
    };
    let one = schema["oneOf"]
        .as_array()
        .is_none_or(|a| a.iter().filter(|s| accepts(doc, s, value)).count() == 1);
    type_ok && enum_ok && string_ok && all("allOf") && any("anyOf") && one
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::String(_) => "string",
        _ => unreachable!("only blank strings and null are probed"),
    }
}

/// Every `oneOf` of the document, wherever it is.
fn one_ofs<'a>(at: String, schema: &'a Value, out: &mut Vec<(String, &'a Vec<Value>)>) {
    match schema {
        Value::Object(o) => {
            if let Some(Value::Array(branches)) = o.get("oneOf") {
                out.push((at.clone(), branches));
            }
            for (k, v) in o {
                one_ofs(format!("{at}/{k}"), v, out);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                one_ofs(format!("{at}/{i}"), v, out);
            }
        }
        _ => {}
    }
}

/// A field of a body is `oneOf` its value, null and a blank string (null
/// too): a blank string or null must match exactly one branch, or the
/// document calls valid input invalid (HR trial: `""` in an email field
/// matched both the address's branch, `format` not asserted, and the blank
/// one). So no branch but the blank one accepts a blank string, and no
/// branch but the null one accepts null.
#[test]
fn one_of_branches_never_both_take_a_blank_string_or_null() {
    let doc = serde_json::to_value(openapi::document()).unwrap();
    let mut all = Vec::new();
    one_ofs(String::new(), &doc, &mut all);
    assert!(all.len() > 20, "the body fields' oneOfs are found");
    let blank_run: String = [
        "\t", "\n", "\u{b}", "\u{c}", "\r", " ", "\u{85}", "\u{a0}", "\u{1680}", "\u{2000}",
        "\u{200a}", "\u{2028}", "\u{2029}", "\u{202f}", "\u{205f}", "\u{3000}",
    ]
    .concat();
    let probes = [
        Value::Null,
        Value::from(""),
        Value::from(" "),
        Value::from("\t\n"),
        Value::from(blank_run),
    ];
    for (at, branches) in all {
        for probe in &probes {
            let taking: Vec<usize> = (0..branches.len())
                .filter(|&i| accepts(&doc, &branches[i], probe))
                .collect();
            assert!(
                taking.len() <= 1,
                "{at}: {probe:?} matches branches {taking:?} of the oneOf"
            );
        }
    }
}

/// Every operation that takes a body lists 413 (a body over 256 KiB) and,
/// when the body is JSON, 415 (another media type), both as problem
/// details; and the server answers so (HR trial: `PATCH /v1/employees/{id}`
/// and the partner operation did not list 413).
#[tokio::test]
async fn every_operation_with_a_body_lists_413_and_415_and_answers_them() {
    let doc = serde_json::to_value(openapi::document()).unwrap();
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let partner = app
        .sign_in_with(("greenhouse-ats", "ats-secret-change-me"), ATS_BOT, None)
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    // Records the routes find, as some look theirs up before the body.
    let employee = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(employee, "Signed Sec 1").await;
    let mut bodies = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Some(content) = op["requestBody"]["content"].as_object() else {
                continue;
            };
            bodies += 1;
            let media = content.keys().next().unwrap().clone();
            let json = content.keys().any(|m| m.contains("json"));
            // A route may have its own limit: E-Verify's Status Change Report (5 MB).
            let limit = if path.ends_with("/everify/status-change-reports") {
                i9_api::routes::status_change_reports::BODY_LIMIT
            } else {
                i9_api::BODY_LIMIT
            };
            let mut refusals = vec![(413, media.clone(), vec![b'x'; limit + 1])];
            if json {
                refusals.push((415, "text/plain".to_owned(), b"{}".to_vec()));
            }
            let id = if path.starts_with("/v1/i9s/") {
                i9
            } else {
                employee
            };
            let url = app.url(&path.replace("{id}", &id.to_string()));
            let token = if path.starts_with("/v1/partners/") {
                &partner
            } else {
                &admin
            };
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            for (status, media, body) in refusals {
                let listed = &op["responses"][status.to_string()]["content"];
                assert!(
                    listed["application/problem+json"].is_object(),
                    "{method} {path}: {status} listed as problem details ({listed})"
                );
                let r = app
                    .http
                    .request(method.clone(), &url)
                    .bearer_auth(token)
                    .header("content-type", &media)
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status().as_u16(), status, "{method} {path} ({media})");
                assert!(
                    r.headers()["content-type"]
                        .to_str()
                        .unwrap()
                        .starts_with("application/problem+json"),
                    "{method} {path}: {status} is problem details"
                );
            }
        }
    }
    assert!(
        bodies >= 6,
        "the token, two employee writes, partner, section2, park"
    );
}

/// The headers each response declares, `(name, required)`.
fn declared_headers(response: &Value) -> BTreeSet<(String, bool)> {
    response["headers"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, h)| (name.clone(), h["required"] == true))
        .collect()
}

/// The response headers of the document (HR trial: none were declared):
/// `Location` on every 201, `idempotent-replayed` (optional) on the 201 of an
/// operation that takes an `Idempotency-Key`, `WWW-Authenticate` on every
/// 401 (and, optional, on a 403 of insufficient scope), `Retry-After` on
/// every 429 and 503 (but `/readyz`'s); and every operation that needs a
/// token lists 503. The server sends each: 401 and 201 below; 429 in
/// throttle.rs and ssn.rs, 503 in unavailable.rs, throttle.rs,
/// connections.rs and `middleware::tests`.
#[test]
fn the_response_headers_are_declared_by_status() {
    let doc = serde_json::to_value(openapi::document()).unwrap();
    let set = |items: &[(&str, bool)]| -> BTreeSet<(String, bool)> {
        items.iter().map(|(n, r)| (n.to_string(), *r)).collect()
    };
    let mut seen = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let bearer = op["security"].as_array().is_some_and(|s| !s.is_empty());
            let idempotent = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["in"] == "header" && p["name"] == "Idempotency-Key");
            if bearer {
                assert!(op["responses"]["503"].is_object(), "{method} {path}: 503");
            }
            for (status, response) in op["responses"].as_object().unwrap() {
                let expected = match status.as_str() {
                    "201" if idempotent => {
                        set(&[("Location", true), ("idempotent-replayed", false)])
                    }
                    "201" => set(&[("Location", true)]),
                    "401" => set(&[("WWW-Authenticate", true)]),
                    "403" if bearer => set(&[("WWW-Authenticate", false)]),
                    "429" => set(&[("Retry-After", true)]),
                    "503" if path != "/readyz" => set(&[("Retry-After", true)]),
                    // The inspection PDF is a download (docs/inspection.md).
                    "200" if path == "/v1/i9s/{id}/pdf" => set(&[("Content-Disposition", false)]),
                    _ => set(&[]),
                };
                assert_eq!(
                    declared_headers(response),
                    expected,
                    "{method} {path} {status}"
                );
                seen.insert(status.clone());
            }
        }
    }
    for status in ["201", "401", "403", "429", "503"] {
        assert!(seen.contains(status), "a {status} is documented");
    }
}

/// The server sends the headers the document requires: `WWW-Authenticate`
/// on the 401 of every operation that needs a token (none sent) and of the
/// token endpoint (a wrong client secret); `Location` on both creates' 201,
/// first and replayed, and `idempotent-replayed: true` on the replay only.
#[tokio::test]
async fn the_server_sends_the_required_headers_the_document_declares() {
    let doc = serde_json::to_value(openapi::document()).unwrap();
    let app = spawn_app().await;
    let braces = regex::Regex::new(r"\{[^}]*\}").unwrap();
    let mut challenged = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let required: Vec<String> = declared_headers(&op["responses"]["401"])
                .into_iter()
                .filter(|(_, required)| *required)
                .map(|(name, _)| name)
                .collect();
            if required.is_empty() {
                continue;
            }
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let url = app.url(&braces.replace_all(path, "1"));
            let request = if path == "/oauth2/access_token" {
                app.http.request(method.clone(), &url).form(&[
                    ("grant_type", "password"),
                    ("client_id", "acme-hr-portal"),
                    ("client_secret", "not-the-secret"),
                    ("username", "admin"),
                    ("password", "admin-Passw0rd!"),
                ])
            } else {
                app.http.request(method.clone(), &url)
            };
            let r = request.send().await.unwrap();
            assert_eq!(r.status(), 401, "{method} {path}");
            for name in required {
                assert!(
                    r.headers().contains_key(&name),
                    "{method} {path}: 401 {name}"
                );
            }
            challenged += 1;
        }
    }
    assert!(challenged > 15, "every operation that needs a token");

    let admin = app.token(ADMIN).await;
    let partner = app
        .sign_in_with(("greenhouse-ats", "ats-secret-change-me"), ATS_BOT, None)
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let group = app.group_id("Portland Warehouse").await;
    let creates = [
        (
            "/v1/employees",
            &admin,
            serde_json::json!({"firstName": "Ana", "lastName": "Diaz", "locationId": group,
                               "startDate": "11/05/2026", "emailAddress": "ana.diaz@mail.example"}),
        ),
        (
            "/v1/partners/i9s/section1",
            &partner,
            serde_json::json!({"integrationCandidateId": "cand-9", "onboardingType": "remote",
                               "firstName": "Bo", "lastName": "Lee", "emailAddress": "bo.lee@mail.example",
                               "startDate": "2026-12-01", "locationId": 3,
                               "employeeReturnUrl": "https://ats.example/candidates/9"}),
        ),
    ];
    for (path, token, body) in creates {
        let created = &doc["paths"][path]["post"]["responses"]["201"];
        assert_eq!(
            declared_headers(created),
            [
                ("Location".to_owned(), true),
                ("idempotent-replayed".to_owned(), false)
            ]
            .into()
        );
        let send = || {
            app.http
                .post(app.url(path))
                .bearer_auth(token)
                .header("idempotency-key", format!("headers-{path}"))
                .json(&body)
                .send()
        };
        let first = send().await.unwrap();
        assert_eq!(first.status(), 201, "{path}");
        let location = first.headers()["location"].clone();
        assert!(location.to_str().unwrap().starts_with("/v1/employees/"));
        assert!(
            first.headers().get("idempotent-replayed").is_none(),
            "{path}"
        );
        let again = send().await.unwrap();
        assert_eq!(again.status(), 201, "{path}");
        assert_eq!(again.headers()["location"], location, "{path}");
        assert_eq!(again.headers()["idempotent-replayed"], "true", "{path}");
    }
}

/// The partner callbacks are the document's `webhooks`, one per event type,
/// each a signed `post` whose body is the event type the service records:
/// strict (every member required, no other), so that a body with a member
/// more or less than the type, or of another type, does not validate.
#[test]
fn the_callbacks_are_webhooks_whose_bodies_are_the_recorded_event_types() {
    use i9_common::{
        domain::I9Status,
        events::{EmploymentEvent, EmploymentEventType, I9Event, I9EventType},
    };
    let doc = serde_json::to_value(openapi::document()).unwrap();
    let types: BTreeSet<&str> = doc["webhooks"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        types,
        BTreeSet::from([
            "i9.created",
            "i9.status_changed",
            "employee.terminated",
            "employee.termination_cancelled",
            "employee.rehired",
            "i9.document_due",
            "everify.case_opened",
            "everify.status_changed"
        ])
    );
    for t in &types {
        let post = &doc["webhooks"][t]["post"];
        let headers: BTreeSet<&str> = post["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["in"] == "header" && p["required"] == true)
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            headers,
            BTreeSet::from(["webhook-id", "webhook-timestamp", "webhook-signature"]),
            "{t}"
        );
        assert!(post["responses"]["2XX"].is_object(), "{t}");
        assert!(post["requestBody"]["required"] == true, "{t}");
    }
    for name in openapi::EVENT_SCHEMAS {
        let schema = &doc["components"]["schemas"][name];
        assert_eq!(schema["additionalProperties"], false, "{name}");
        let properties: BTreeSet<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        assert_eq!(required, properties, "{name}: every member required");
    }

    let validators = crate::callbacks::webhook_validators_of(&doc);
    let valid = |t: &str, body: &Value| validators[t].is_valid(body);
    let i9 = serde_json::to_value(I9Event {
        event_type: I9EventType::Created,
        event_id: uuid::Uuid::new_v4(),
        sequence: 1,
        occurred_at: "2026-12-02T15:04:05.123456".into(),
        employee_id: 7,
        i9_id: 9,
        integration_candidate_id: Some("cand-1".into()),
        integration_transaction_id: None,
        i9_status: I9Status::Section1Incomplete,
        previous_i9_status: None,
        i9_next_step: Some("The employee completes and signs Section 1".into()),
        i9_next_step_due_date: chrono::NaiveDate::from_ymd_opt(2026, 12, 5),
        i9_url: "https://i9.example/v1/i9s/9".into(),
    })
    .unwrap();
    assert!(valid("i9.created", &i9));
    assert!(!valid("i9.status_changed", &i9), "another type");
    let employment = serde_json::to_value(EmploymentEvent {
        event_type: EmploymentEventType::TerminationCancelled,
        event_id: uuid::Uuid::new_v4(),
        sequence: 2,
        occurred_at: "2026-12-02T15:04:05.123456".into(),
        employee_id: 7,
        integration_candidate_id: Some("cand-1".into()),
        integration_transaction_id: None,
        start_date: chrono::NaiveDate::from_ymd_opt(2026, 12, 1),
        terminated_date: None,
        i9_id: None,
        i9_status: None,
        i9_url: None,
    })
    .unwrap();
    assert!(valid("employee.termination_cancelled", &employment));
    assert!(!valid("employee.rehired", &employment), "another type");
    for (t, body) in [
        ("i9.created", &i9),
        ("employee.termination_cancelled", &employment),
    ] {
        let mut more = body.clone();
        more["extra"] = Value::from(1);
        assert!(!valid(t, &more), "{t}: a member the type lacks");
        for member in body.as_object().unwrap().keys() {
            let mut less = body.clone();
            less.as_object_mut().unwrap().remove(member);
            assert!(!valid(t, &less), "{t}: without {member}");
        }
        let mut late = body.clone();
        late["occurredAt"] = Value::from("2026-12-02T15:04:05Z");
        assert!(!valid(t, &late), "{t}: occurredAt in another form");
    }
}

/// Section 2's document titles: each list's schema is its titles as `enum`
/// or, as the API accepts them, in any letter case with white space around
/// (docs/api.md, "Section 2 documents"); a misspelling matches neither.
#[test]
fn document_titles_are_described_in_any_letter_case() {
    let doc = serde_json::to_value(openapi::document()).unwrap();
    for list in ["ListA", "ListB", "ListC"] {
        let schema = &doc["components"]["schemas"][list];
        let branches = schema["anyOf"].as_array().expect("anyOf");
        let titles = branches[0]["enum"].as_array().expect("the titles' enum");
        let pattern = regex::Regex::new(branches[1]["pattern"].as_str().unwrap()).unwrap();
        assert!(titles.len() >= 7, "{list}");
        for title in titles {
            let title = title.as_str().unwrap();
            for variant in [
                title.to_owned(),
                title.to_lowercase(),
                title.to_uppercase(),
                format!(" \t{} ", title.to_lowercase()),
            ] {
                assert!(pattern.is_match(&variant), "{list}: {variant:?}");
            }
            for wrong in [
                title.replace(' ', "  "),
                title.replace('.', ""),
                format!("{title}s"),
                format!("x{title}"),
            ]
            .into_iter()
            .filter(|w| w != title)
            {
                assert!(!pattern.is_match(&wrong), "{list}: {wrong:?}");
            }
        }
    }
}
