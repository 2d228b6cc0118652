//! No input, however malformed, gets a 5xx: finding 15 (a NUL byte in a
//! query parameter answered 500) and the generated bad-input run.
//!
//! `generated_bad_input_never_gets_a_5xx` sends over 10,000 requests, made
//! from a seeded RNG, across every route of `api/src/lib.rs` (and unknown
//! paths and methods) with valid tokens of four kinds and invalid ones:
//! malformed JSON, wrong types, huge and odd strings, NUL and invalid UTF-8,
//! odd query strings and headers, wrong methods, and raw requests no HTTP
//! library would send. The seed is printed; `BAD_INPUT_SEED=<n>` replays a run.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    fmt::Write as _,
    sync::Arc,
    time::Duration,
};

use futures_util::{stream, StreamExt};
use i9_api::error::ApiError;
use i9_tests::{
    eventually, spawn_app, spawn_stack, TestApp, ADMIN, ATS_BOT, PORTAL, REPORTING, WEST_HR,
};
use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};
use reqwest::{
    header::{HeaderName, HeaderValue},
    Method,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PARTNER: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");

// ---------------------------------------------------------------------------
// Finding 15 and its neighbours, one request each.

fn problem_fields(body: &Value) -> Vec<(String, String)> {
    body["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    (
                        e["field"].as_str().unwrap_or_default().to_owned(),
                        e["code"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn problem_of(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("application/problem+json"), "{status} {ct}");
    (status, r.json().await.unwrap())
}

#[tokio::test]
async fn nul_and_invalid_utf8_in_a_query_are_400s_naming_the_parameter() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    for (query, field, code) in [
        ("lastName=%00", "lastName", "invalid_character"),
        ("lastName=Sm%00ith", "lastName", "invalid_character"),
        ("firstName=%FF", "firstName", "invalid_encoding"),
        ("firstName=%C3%28", "firstName", "invalid_encoding"),
        ("custom1=%ED%A0%80", "custom1", "invalid_encoding"),
    ] {
        let (status, body) =
            problem_of(app.get(&format!("/v1/employees?{query}"), &token).await).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(
            problem_fields(&body),
            [(field.to_owned(), code.to_owned())],
            "{query}"
        );
    }
    // Every collection parses its query in the one place.
    for path in [
        "/v1/i9s",
        "/v1/users",
        "/v1/groups",
        "/v1/eins",
        "/v1/roles",
    ] {
        let (status, _) = problem_of(app.get(&format!("{path}?name=%00"), &token).await).await;
        assert_eq!(status, 400, "{path}");
    }
}

#[tokio::test]
async fn nul_in_a_json_body_is_a_422_naming_the_field_and_writes_nothing() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let before = employees(&app).await;
    let body =
        r#"{"firstName": "Ana\u0000", "lastName": "Diaz", "locationId": 3, "custom1": "ok"}"#;
    let r = app
        .http
        .post(app.url("/v1/employees"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let (status, problem) = problem_of(r).await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(
        problem_fields(&problem),
        [("firstName".to_owned(), "invalid_character".to_owned())]
    );
    // Lone surrogates and invalid UTF-8 are not JSON.
    for body in [
        &br#"{"firstName": "\ud800", "lastName": "Diaz", "locationId": 3}"#[..],
        b"{\"firstName\": \"\xff\", \"lastName\": \"Diaz\", \"locationId\": 3}",
    ] {
        let r = app
            .http
            .post(app.url("/v1/employees"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        let (status, _) = problem_of(r).await;
        assert_eq!(status, 400);
    }
    assert_eq!(employees(&app).await, before, "nothing written");
}

#[tokio::test]
async fn nul_in_a_form_is_refused_at_the_token_endpoint_and_on_the_pages() {
    let app = spawn_app().await;
    for form in [
        "grant_type=password&client_id=acme-hr-portal%00&client_secret=x&username=admin&password=x",
        "grant_type=password&client_id=acme-hr-portal&client_secret=x&username=ad%00min&password=x",
        "grant_type=password&client_id=acme-hr-portal&client_secret=x&username=%FF&password=x",
    ] {
        let r = app
            .http
            .post(app.url("/oauth2/access_token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{form}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"], "invalid_request", "{form}");
    }
    // Client credentials in Basic, form-encoded first (RFC 6749 2.3.1).
    let r = app
        .http
        .post(app.url("/oauth2/access_token"))
        // base64 of `acme-hr-portal%00:x`
        .header("authorization", "Basic YWNtZS1oci1wb3J0YWwlMDA6eA==")
        .form(&[
            ("grant_type", "password"),
            ("username", "admin"),
            ("password", "x"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["error"], "invalid_request");

    // A link path that is not UTF-8 is a link that does not work.
    for path in [
        "/i9/section1/%FF%FE",
        "/account/set-password/%C3%28",
        "/i9/section1/s1_%00",
    ] {
        let r = app.http.get(app.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
    }
}

#[tokio::test]
async fn the_section_1_page_names_a_field_with_nul_and_signs_nothing() {
    let app = spawn_stack().await;
    let (_, link) = remote_hire(&app, "cand-nul").await;
    let form = "lastName=Di%00az&firstName=Ana&addressStreet=1+Main&addressCity=Portland&addressState=OR&addressZip=97201&dateOfBirth=1990-03-14&attestation=citizen&agree=yes&signature=Ana+Diaz";
    let r = app
        .http
        .post(&link)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(html.contains("id=\"lastName-error\""), "{html}");
    assert!(html.contains("cannot be used"), "{html}");
    let signed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'i9.section1'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(signed, 0);
}

#[tokio::test]
async fn postgres_refusing_a_clients_value_is_a_400_and_anything_else_stays_opaque() {
    let app = spawn_app().await;
    let mut conn = app.pool().acquire().await.unwrap();
    sqlx::query("CREATE TEMP TABLE t (short VARCHAR(2), long TEXT)")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query("CREATE INDEX ON t (long)")
        .execute(&mut *conn)
        .await
        .unwrap();
    // Too large for a btree entry even compressed.
    let huge: String = (0..400)
        .map(|_| uuid::Uuid::new_v4().simple().to_string())
        .collect();
    let cases: Vec<(&str, Option<String>)> = vec![
        ("SELECT $1::TEXT", Some("a\0b".to_owned())),
        ("INSERT INTO t (short) VALUES ($1)", Some("abc".to_owned())),
        ("INSERT INTO t (long) VALUES ($1)", Some(huge)),
    ];
    for (sql, value) in cases {
        let e = match sqlx::query(sql).bind(value).execute(&mut *conn).await {
            Err(e) => e,
            Ok(r) => panic!("{sql} passed: {r:?}"),
        };
        let code = e
            .as_database_error()
            .and_then(|d| d.code())
            .map(|c| c.into_owned());
        let api: ApiError = e.into();
        assert!(
            matches!(api, ApiError::BadRequest { .. }),
            "{sql}: {code:?} -> {api:?}"
        );
    }
    let e = sqlx::query("SELECT * FROM no_such_table")
        .execute(&mut *conn)
        .await
        .unwrap_err();
    assert!(matches!(ApiError::from(e), ApiError::Internal(_)));
    // A write that lost a race no handler maps (a unique index): a 409; a
    // transaction rolled back by a conflict: a 503, to retry.
    sqlx::query("CREATE UNIQUE INDEX ON t (short)")
        .execute(&mut *conn)
        .await
        .unwrap();
    let twice = "INSERT INTO t (short) VALUES ('ab')";
    sqlx::query(twice).execute(&mut *conn).await.unwrap();
    let e = sqlx::query(twice).execute(&mut *conn).await.unwrap_err();
    assert!(matches!(ApiError::from(e), ApiError::Conflict(_)));
    let e = sqlx::query("DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '40P01'; END $$")
        .execute(&mut *conn)
        .await
        .unwrap_err();
    assert!(matches!(ApiError::from(e), ApiError::Unavailable));
}

async fn employees(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM employees")
        .fetch_one(app.pool())
        .await
        .unwrap()
}

async fn bearer(app: &TestApp, client: (&str, &str), user: (&str, &str)) -> String {
    app.sign_in_with(client, user, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A remote hire through the partner operation: its employee id and Section 1 link.
async fn remote_hire(app: &TestApp, candidate: &str) -> (i64, String) {
    let token = bearer(app, PARTNER, ATS_BOT).await;
    let body = json!({"integrationCandidateId": candidate, "onboardingType": "remote", "firstName": "Ana",
                      "lastName": "Diaz", "emailAddress": "ana@mail.example", "startDate": "2026-12-01",
                      "locationId": 3, "employeeReturnUrl": "https://ats.example/done/1"});
    let r = app
        .post_json("/v1/partners/i9s/section1", &token, &body)
        .await;
    assert_eq!(r.status(), 201);
    let b: Value = r.json().await.unwrap();
    let id = b["id"].as_i64().unwrap();
    eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;
    (id, b["i9Section1Link"].as_str().unwrap().to_owned())
}

// ---------------------------------------------------------------------------
// The generated run.

/// Requests sent through the HTTP client, and raw ones on a bare socket.
const REQUESTS: usize = 10_000;
const RAW_REQUESTS: usize = 200;
const CONCURRENCY: usize = 8;

/// What answers a route family gives for a 4xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Api,
    Token,
    Page,
}

#[derive(Debug, Clone)]
struct Req {
    /// The route template, for the table.
    route: &'static str,
    family: Family,
    method: Method,
    /// Path and query, as sent.
    target: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Option<Vec<u8>>,
    /// Reaches password hashing at the token endpoint: sent one at a time.
    hashes: bool,
}

/// Tokens, ids and links the generator draws from.
struct World {
    tokens: Vec<String>,
    refresh: String,
    employee_ids: Vec<i64>,
    i9_ids: Vec<i64>,
    group_ids: Vec<i64>,
    other_ids: Vec<i64>,
    section1_link: String,
    password_link: String,
}

const ODD_STRINGS: &[&str] = &[
    "",
    " ",
    "\t\n\r",
    "Zoë Ångström-Ñúñez",
    "名前 テスト",
    "e\u{301}\u{301}\u{301}",
    "\u{202E}lanigiro\u{202C}",
    "مرحبا بالعالم",
    "שלום",
    "👩‍👩‍👧‍👦🏳️‍🌈",
    "\u{200B}\u{FEFF}\u{2060}",
    "\u{1}\u{2}\u{7}\u{1b}[31m\u{7f}\u{85}",
    "line\nbreak",
    "a\0b",
    "\0",
    "'; DROP TABLE employees; --",
    "%' OR '1'='1",
    "$1",
    "%s%n%x",
    "{}",
    "<script>alert(1)</script>",
    "../../../etc/passwd",
    "\\",
    "\"",
    "null",
    "true",
    "-1",
    "0",
    "1e400",
    "99999999999999999999999",
    "-9223372036854775809",
    "2026-02-30",
    "0000-01-01",
    "9999-12-31",
    "12/31/99999",
    "123-45-6789",
    "000-00-0000",
    "123456789",
    "a@b",
    "@",
    "a@example.com",
    "https://example.com/x",
    "http://127.0.0.1:1/",
    "javascript:alert(1)",
    "yes",
    "if allowed",
    "remote",
    "on-site",
    "read+write",
    "\u{FFFD}",
    "\u{10FFFF}",
];

const EMPLOYEE_FIELDS: &[&str] = &[
    "firstName",
    "lastName",
    "middleName",
    "socialSecurityNumber",
    "dateOfBirth",
    "startDate",
    "profileId",
    "otherName",
    "jobTitle",
    "emailAddress",
    "locationId",
    "legalEntity",
    "terminatedDate",
    "languagePreference",
    "custom1",
    "custom8",
    "notificationEmail1",
    "addressStreet",
    "addressCity",
    "addressState",
    "addressZip",
    "cellNumber",
    "createLogin",
    "sendLoginEmail",
    "createI9",
    "createRemotehireI9",
    "createRemoteHireI9",
    "rehire",
    "id",
];
const EMPLOYEE_TEXT: &[&str] = &[
    "firstName",
    "lastName",
    "middleName",
    "otherName",
    "jobTitle",
    "custom1",
    "custom2",
    "custom8",
    "addressStreet",
    "addressStreet2",
    "addressCity",
    "addressState",
    "addressZip",
    "cellNumber",
];
const PARTNER_FIELDS: &[&str] = &[
    "integrationCandidateId",
    "onboardingType",
    "employeeReturnUrl",
    "firstName",
    "lastName",
    "emailAddress",
    "startDate",
    "locationId",
    "languagePreference",
    "socialSecurityNumber",
];
const SECTION2_FIELDS: &[&str] = &[
    "listA1DocTitle",
    "listA1DocIssuer",
    "listA1DocNumber",
    "listA1DocExpiration",
    "listBDocTitle",
    "listBDocNumber",
    "listBDocExpiration",
    "listCDocTitle",
    "listCDocNumber",
    "employerFirstName",
    "employerLastName",
    "employerTitle",
    "employerBusiness",
    "employerSignature",
    "i9Notes",
];
const SECTION1_FIELDS: &[&str] = &[
    "lastName",
    "firstName",
    "middleInitial",
    "addressStreet",
    "addressCity",
    "addressState",
    "addressZip",
    "dateOfBirth",
    "socialSecurityNumber",
    "attestation",
    "alienNumber",
    "workAuthorizationExpiration",
    "agree",
    "signature",
];
const TOKEN_FIELDS: &[&str] = &[
    "grant_type",
    "client_id",
    "client_secret",
    "username",
    "password",
    "refresh_token",
    "scope",
];

fn odd_string(rng: &mut StdRng) -> String {
    match rng.gen_range(0..10) {
        0 => "x".repeat(*[41, 256, 5_000, 70_000].choose(rng).unwrap()),
        1 => ODD_STRINGS
            .choose(rng)
            .unwrap()
            .repeat(rng.gen_range(2..40)),
        2 => (0..rng.gen_range(1..30))
            .map(|_| char::from_u32(rng.gen_range(0..0x11_0000)).unwrap_or('\u{FFFD}'))
            .collect(),
        _ => (*ODD_STRINGS.choose(rng).unwrap()).to_owned(),
    }
}

fn odd_value(rng: &mut StdRng, depth: u32) -> Value {
    match rng.gen_range(0..14) {
        0 => json!(null),
        1 => json!(rng.gen::<bool>()),
        2 => json!(rng.gen::<i64>()),
        3 => json!(*[0, -1, 1, 3, 4, 10, i64::MAX, i64::MIN]
            .choose(rng)
            .unwrap()),
        4 => json!(rng.gen::<f64>() * 1e6),
        5 if depth < 3 => Value::Array(
            (0..rng.gen_range(0..4))
                .map(|_| odd_value(rng, depth + 1))
                .collect(),
        ),
        6 if depth < 3 => {
            let mut m = serde_json::Map::new();
            for _ in 0..rng.gen_range(0..4) {
                m.insert(odd_string(rng), odd_value(rng, depth + 1));
            }
            Value::Object(m)
        }
        _ => json!(odd_string(rng)),
    }
}

/// Bodies no JSON parser accepts, or that hold what Postgres cannot store.
fn malformed_json(rng: &mut StdRng) -> Vec<u8> {
    let fixed: &[&[u8]] = &[
        b"",
        b"{",
        b"}",
        b"{\"firstName\": }",
        b"{\"firstName\": \"a\",}",
        b"{'firstName': 'a'}",
        b"{\"a\": NaN}",
        b"{\"a\": 1e400}",
        b"{\"a\": 123456789012345678901234567890}",
        b"null",
        b"[]",
        b"[{}]",
        b"\"string\"",
        b"42",
        b"\xef\xbb\xbf{}",
        b"{\"a\": \"\xff\xfe\"}",
        b"{\"a\": \"\xed\xa0\x80\"}",
        b"{\"\xc3\x28\": 1}",
        br#"{"firstName": "\ud800"}"#,
        br#"{"firstName": "\udfff\ud800"}"#,
        br#"{"firstName": "\u0000", "lastName": "\u0000"}"#,
        br#"{"k\u0000ey": 1}"#,
        br#"{"firstName": "a", "firstName": "b"}"#,
        b"{\"a\":1}{\"b\":2}",
        b"\x00\x00\x00",
    ];
    match rng.gen_range(0..5) {
        0 => {
            let depth = rng.gen_range(100..3_000);
            let mut b = "[".repeat(depth).into_bytes();
            b.extend("]".repeat(depth).into_bytes());
            b
        }
        1 => {
            let mut b: Vec<u8> = (0..rng.gen_range(1..200)).map(|_| rng.gen()).collect();
            b.insert(0, b'{');
            b
        }
        _ => fixed.choose(rng).unwrap().to_vec(),
    }
}

/// A write's body: a valid one with odd text in a few of its text fields
/// (most are accepted, exercising storage of odd text), or one broken in
/// any way.
fn write_body(rng: &mut StdRng, fields: &[&str], text_fields: &[&str], base: Value) -> Vec<u8> {
    if rng.gen_bool(0.4) {
        if let Value::Object(mut m) = base {
            for _ in 0..rng.gen_range(1..4) {
                let value: String = odd_string(rng).chars().take(rng.gen_range(1..60)).collect();
                m.insert((*text_fields.choose(rng).unwrap()).to_owned(), json!(value));
            }
            return serde_json::to_vec(&m).unwrap();
        }
    }
    json_body(rng, fields, Some(base))
}

fn json_body(rng: &mut StdRng, fields: &[&str], base: Option<Value>) -> Vec<u8> {
    if rng.gen_bool(0.2) {
        return malformed_json(rng);
    }
    let mut object = match base {
        Some(Value::Object(m)) if rng.gen_bool(0.4) => m,
        _ => serde_json::Map::new(),
    };
    for _ in 0..rng.gen_range(1..8) {
        let name = if rng.gen_bool(0.85) {
            (*fields.choose(rng).unwrap()).to_owned()
        } else {
            odd_string(rng)
        };
        object.insert(name, odd_value(rng, 0));
    }
    serde_json::to_vec(&Value::Object(object)).unwrap()
}

/// A name or value for a query string or form: plain, percent-encoded, or broken.
fn url_part(rng: &mut StdRng) -> String {
    const RAW: &[&str] = &[
        "%00",
        "%FF",
        "%C3%28",
        "%ED%A0%80",
        "%F4%90%80%80",
        "%",
        "%%",
        "%zz",
        "%4",
        "+",
        "%2B",
        "%26",
        "%3D",
        ";",
        "%0A",
        "%0D%0A",
        "%E2%80%AE",
        "%F0%9F%98%80",
        "%23",
    ];
    match rng.gen_range(0..4) {
        0 => (0..rng.gen_range(1..4))
            .map(|_| *RAW.choose(rng).unwrap())
            .collect(),
        1 => {
            let s = odd_string(rng);
            let s: String = s.chars().take(300).collect();
            serde_urlencoded::to_string([("", s)]).unwrap()[1..].to_owned()
        }
        _ => {
            let s = *ODD_STRINGS.choose(rng).unwrap();
            serde_urlencoded::to_string([("", s)]).unwrap()[1..].to_owned()
        }
    }
}

fn list_query(rng: &mut StdRng, filters: &[&str]) -> String {
    let mut parts = Vec::new();
    for _ in 0..rng.gen_range(0..5) {
        let name = match rng.gen_range(0..10) {
            0..=4 => (*filters.choose(rng).unwrap()).to_owned(),
            5 => "page".to_owned(),
            6 => "page_size".to_owned(),
            7 => String::new(),
            _ => url_part(rng),
        };
        let value = match rng.gen_range(0..6) {
            0 => (*[
                "1",
                "0",
                "-1",
                "2",
                "50",
                "51",
                "1.5",
                " 1",
                "1e3",
                "0x10",
                "99999999999999999999999",
                "9223372036854775807",
                "9223372036854775808",
                "",
            ]
            .choose(rng)
            .unwrap())
            .to_owned(),
            _ => url_part(rng),
        };
        match rng.gen_range(0..12) {
            0 => parts.push(name),
            1 => parts.push(format!("{name}={value}={value}")),
            2 => {
                parts.push(format!("{name}={value}"));
                parts.push(format!("{name}={value}"));
            }
            _ => parts.push(format!("{name}={value}")),
        }
    }
    let mut q = parts.join(if rng.gen_bool(0.9) { "&" } else { "&&" });
    if rng.gen_bool(0.03) {
        q = format!("page={}", "9".repeat(rng.gen_range(20..2_000)));
    }
    q
}

fn odd_id(rng: &mut StdRng, ids: &[i64]) -> String {
    match rng.gen_range(0..12) {
        0..=4 => ids.choose(rng).copied().unwrap_or(1).to_string(),
        5 => (*[
            "0",
            "-1",
            "1.0",
            "+1",
            " 1",
            "1e3",
            "0x1",
            "99999999999999999999",
            "9223372036854775808",
            "%00",
            "%FF",
            "%C3%28",
            "abc",
            "%20",
            "..%2F..",
            "%2F",
            "1%00",
            "",
        ]
        .choose(rng)
        .unwrap())
        .to_owned(),
        6 => rng.gen::<i64>().to_string(),
        _ => url_part(rng),
    }
}

fn link_token(rng: &mut StdRng, valid: &str, prefix: &str) -> String {
    match rng.gen_range(0..8) {
        0..=2 => valid.to_owned(),
        3 => format!("{prefix}{}", "A".repeat(43)),
        4 => format!("{valid}{}", url_part(rng)),
        5 => "x".repeat(rng.gen_range(100..5_000)),
        _ => url_part(rng),
    }
}

fn form_body(rng: &mut StdRng, fields: &[&str], hashing: bool) -> Vec<u8> {
    let mut parts = Vec::new();
    for _ in 0..rng.gen_range(0..10) {
        let name = if rng.gen_bool(0.85) {
            (*fields.choose(rng).unwrap()).to_owned()
        } else {
            url_part(rng)
        };
        parts.push(format!("{name}={}", url_part(rng)));
    }
    if hashing {
        // Complete enough to reach client authentication.
        parts = vec![
            "grant_type=password".to_owned(),
            format!("client_id={}", PORTAL.0),
            format!("client_secret={}", url_part(rng)),
            format!("username={}", url_part(rng)),
            format!("password={}", url_part(rng)),
        ];
    }
    let mut body = parts.join("&").into_bytes();
    match rng.gen_range(0..20) {
        0 => body.extend_from_slice(b"&raw=\xff\xfe"),
        1 => body.extend_from_slice(b"&nul=a\x00b"),
        2 => body = "a=b&".repeat(rng.gen_range(1_000..80_000)).into_bytes(),
        _ => {}
    }
    body
}

fn header(name: &str, value: &[u8]) -> Option<(HeaderName, HeaderValue)> {
    Some((
        HeaderName::from_bytes(name.as_bytes()).ok()?,
        HeaderValue::from_bytes(value).ok()?,
    ))
}

fn content_type(rng: &mut StdRng, right: &'static str) -> Option<(HeaderName, HeaderValue)> {
    let v: &[u8] = match rng.gen_range(0..14) {
        0 => b"text/plain",
        1 => b"application/x-www-form-urlencoded",
        2 => b"application/json",
        3 => b"application/json; charset=latin1",
        4 => b"multipart/form-data; boundary=x",
        5 => b"application/merge-patch+json",
        6 => b"application/jsonx",
        7 => b"*/*",
        8 => b"application/json\xff",
        9 => b"",
        10 => return None,
        _ => right.as_bytes(),
    };
    header("content-type", v)
}

/// A writer's credentials and content type, as a real client sends them.
fn well_formed(token: &str) -> Vec<(HeaderName, HeaderValue)> {
    header("authorization", format!("Bearer {token}").as_bytes())
        .into_iter()
        .chain(header("content-type", b"application/json"))
        .collect()
}

fn authorization(rng: &mut StdRng, world: &World) -> Option<(HeaderName, HeaderValue)> {
    let token = world.tokens.choose(rng).unwrap();
    let v: Vec<u8> = match rng.gen_range(0..20) {
        0 => return None,
        1 => b"Bearer".to_vec(),
        2 => b"Bearer ".to_vec(),
        3 => format!("bearer {token}").into_bytes(),
        4 => format!("Bearer {token} extra").into_bytes(),
        5 => format!("Bearer  {token}").into_bytes(),
        6 => format!("Basic {token}").into_bytes(),
        7 => format!("Bearer i9at_{}", "A".repeat(43)).into_bytes(),
        8 => format!("Bearer {}", world.refresh).into_bytes(),
        9 => format!("Bearer {}", "x".repeat(rng.gen_range(100..16_000))).into_bytes(),
        10 => b"Bearer \xff\xfe\xfd".to_vec(),
        11 => format!("Bearer {}", &token[..token.len() - 1]).into_bytes(),
        _ => format!("Bearer {token}").into_bytes(),
    };
    header("authorization", &v)
}

fn odd_headers(rng: &mut StdRng, n: usize) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    if rng.gen_bool(0.3) {
        let key: Vec<u8> = match rng.gen_range(0..8) {
            0 => Vec::new(),
            1 => b"   ".to_vec(),
            2 => vec![b'k'; 300],
            3 => b"\xff\xfe".to_vec(),
            4 => b"same-key".to_vec(),
            _ => format!("key-{n}-{}", rng.gen::<u32>()).into_bytes(),
        };
        out.extend(header("idempotency-key", &key));
    }
    if rng.gen_bool(0.1) {
        let id = match rng.gen_range(0..3) {
            0 => format!("fz-{n}"),
            1 => "x".repeat(200),
            _ => "bad id!".to_owned(),
        };
        out.extend(header("x-request-id", id.as_bytes()));
    }
    if rng.gen_bool(0.05) {
        out.extend(header(
            "x-odd",
            "v".repeat(rng.gen_range(1_000..30_000)).as_bytes(),
        ));
    }
    if rng.gen_bool(0.05) {
        out.extend(header("accept", b"text/html;q=\xff, */*;q=-1"));
    }
    out
}

const LISTS: &[(&str, &str, &[&str])] = &[
    (
        "/v1/employees",
        "/v1/employees",
        &[
            "lastName",
            "firstName",
            "custom1",
            "socialSecurityNumber",
            "dateOfBirth",
            "languagePreference",
            "locationId",
            "locationIdWithin",
            "profileId",
        ],
    ),
    (
        "/v1/i9s",
        "/v1/i9s",
        &[
            "firstName",
            "lastName",
            "startDate",
            "i9Expiration",
            "status",
        ],
    ),
    ("/v1/eins", "/v1/eins", &["entityName", "ein", "everifyId"]),
    ("/v1/groups", "/v1/groups", &["name", "managed"]),
    (
        "/v1/users",
        "/v1/users",
        &["login", "lastName", "emailAddress", "title"],
    ),
    ("/v1/roles", "/v1/roles", &["name"]),
    (
        "/v1/partners/locations",
        "/v1/partners/locations",
        &["name"],
    ),
];

const OTHER_METHODS: &[&str] = &[
    "PUT", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT", "FOO", "PATCH", "POST", "GET",
];

fn generate(rng: &mut StdRng, world: &World, n: usize) -> Req {
    let mut req = Req {
        route: "",
        family: Family::Api,
        method: Method::GET,
        target: String::new(),
        headers: Vec::new(),
        body: None,
        hashes: false,
    };
    let employee_base =
        json!({"firstName": "Fuzz", "lastName": format!("Case{n}"), "locationId": 3});
    match rng.gen_range(0..100) {
        0..=29 => {
            let (route, path, filters) = LISTS.choose(rng).unwrap();
            req.route = route;
            req.target = format!("{path}?{}", list_query(rng, filters));
            if rng.gen_bool(0.1) {
                req.route = "/v1/groups/{id}/users";
                req.target = format!(
                    "/v1/groups/{}/users?{}",
                    odd_id(rng, &world.group_ids),
                    list_query(rng, &["login", "lastName"])
                );
            }
            req.headers.extend(authorization(rng, world));
        }
        30..=39 => {
            let (route, ids): (&'static str, &[i64]) = match rng.gen_range(0..7) {
                0 => ("/v1/employees/{id}", &world.employee_ids),
                1 => (
                    *[
                        "/v1/employees/{id}",
                        "/v1/employees/{id}/periods",
                        "/v1/employees/{id}/history",
                    ]
                    .choose(rng)
                    .unwrap(),
                    &world.employee_ids,
                ),
                2 => ("/v1/i9s/{id}", &world.i9_ids),
                3 => (
                    *["/v1/i9s/{id}", "/v1/i9s/{id}/history"]
                        .choose(rng)
                        .unwrap(),
                    &world.i9_ids,
                ),
                4 => ("/v1/groups/{id}", &world.group_ids),
                5 => ("/v1/users/{id}", &world.other_ids),
                _ => (
                    *["/v1/eins/{id}", "/v1/roles/{id}"].choose(rng).unwrap(),
                    &world.other_ids,
                ),
            };
            req.route = route;
            req.target = route.replace("{id}", &odd_id(rng, ids));
            if rng.gen_bool(0.2) {
                req.target.push('?');
                req.target.push_str(&list_query(rng, &["fields"]));
            }
            req.headers.extend(authorization(rng, world));
        }
        40..=51 => {
            req.route = "/v1/employees";
            req.method = Method::POST;
            req.target = "/v1/employees".into();
            req.body = Some(write_body(
                rng,
                EMPLOYEE_FIELDS,
                EMPLOYEE_TEXT,
                employee_base,
            ));
            if rng.gen_bool(0.5) {
                req.headers = well_formed(&world.tokens[0]);
            } else {
                req.headers.extend(authorization(rng, world));
                req.headers.extend(content_type(rng, "application/json"));
            }
        }
        52..=61 => {
            req.route = "/v1/employees/{id}";
            req.method = Method::PATCH;
            req.target = format!("/v1/employees/{}", odd_id(rng, &world.employee_ids));
            req.body = Some(write_body(
                rng,
                EMPLOYEE_FIELDS,
                EMPLOYEE_TEXT,
                employee_base,
            ));
            if rng.gen_bool(0.5) {
                req.headers = well_formed(&world.tokens[0]);
            } else {
                req.headers.extend(authorization(rng, world));
                req.headers.extend(content_type(rng, "application/json"));
            }
        }
        62..=67 => {
            req.route = "/v1/partners/i9s/section1";
            req.method = Method::POST;
            req.target = req.route.into();
            let base = json!({"integrationCandidateId": format!("fz-{n}"), "onboardingType": "on-site",
                              "firstName": "Fuzz", "lastName": "Partner", "emailAddress": "fz@mail.example",
                              "startDate": "2026-12-01", "locationId": 3});
            req.body = Some(write_body(
                rng,
                PARTNER_FIELDS,
                &["firstName", "lastName", "integrationCandidateId"],
                base,
            ));
            if rng.gen_bool(0.5) {
                req.headers = well_formed(&world.tokens[3]);
            } else {
                req.headers.extend(authorization(rng, world));
                req.headers.extend(content_type(rng, "application/json"));
            }
        }
        68..=75 => {
            req.route = [
                "/v1/i9s/{id}/section2",
                "/v1/i9s/{id}/complete",
                "/v1/i9s/{id}/approve",
                "/v1/i9s/{id}/park",
                "/v1/i9s/{id}/section1-link",
            ]
            .choose(rng)
            .unwrap();
            req.method = Method::POST;
            req.target = req.route.replace("{id}", &odd_id(rng, &world.i9_ids));
            if rng.gen_bool(0.8) {
                req.body = Some(json_body(rng, SECTION2_FIELDS, None));
            }
            if rng.gen_bool(0.5) {
                req.headers = well_formed(&world.tokens[0]);
            } else {
                req.headers.extend(authorization(rng, world));
                req.headers.extend(content_type(rng, "application/json"));
            }
        }
        76..=83 => {
            req.route = "/oauth2/access_token";
            req.family = Family::Token;
            req.method = Method::POST;
            req.target = if rng.gen_bool(0.9) {
                "/oauth2/access_token"
            } else {
                "/oauth2/access_token/"
            }
            .into();
            // Mostly requests that fail before any hashing; a few that reach it.
            req.hashes = rng.gen_bool(0.02);
            req.body = Some(form_body(rng, TOKEN_FIELDS, req.hashes));
            req.headers
                .extend(content_type(rng, "application/x-www-form-urlencoded"));
            if rng.gen_bool(0.1) {
                let v = match rng.gen_range(0..4) {
                    0 => b"Basic %%%".to_vec(),
                    1 => b"Basic \xff".to_vec(),
                    2 => format!("Basic {}", "QQ==".repeat(rng.gen_range(1..3_000))).into_bytes(),
                    _ => b"Basic YWNtZS1oci1wb3J0YWwlMDA6eA==".to_vec(),
                };
                req.headers.extend(header("authorization", &v));
                req.hashes = true;
            }
        }
        84..=85 => {
            // The employee's own page, with a session cookie that is
            // missing, malformed or unknown.
            req.family = Family::Page;
            let (route, method, fields): (&'static str, Method, &[&str]) = match rng.gen_range(0..5)
            {
                0 => ("/account/sign-in", Method::GET, &[]),
                1 => ("/account/sign-in", Method::POST, &["login", "password"]),
                2 => ("/account", Method::GET, &[]),
                3 => ("/account/sign-out", Method::POST, &["csrf"]),
                _ => (
                    "/account/i9s/{id}/section1",
                    if rng.gen_bool(0.5) {
                        Method::GET
                    } else {
                        Method::POST
                    },
                    SECTION1_FIELDS,
                ),
            };
            req.route = route;
            req.method = method.clone();
            req.target = route.replace("{id}", &url_part(rng));
            if rng.gen_bool(0.3) {
                req.target.push_str(&format!("?lang={}", url_part(rng)));
            }
            if rng.gen_bool(0.7) {
                let cookie = format!("i9_account={}", link_token(rng, "i9as_", "i9as_"));
                req.headers.extend(header("cookie", cookie.as_bytes()));
            }
            if method == Method::POST {
                // A sign-in may reach password hashing: one at a time.
                req.hashes = route == "/account/sign-in";
                req.body = Some(form_body(rng, fields, false));
                req.headers
                    .extend(content_type(rng, "application/x-www-form-urlencoded"));
            }
        }
        86..=91 => {
            req.family = Family::Page;
            let section1 = rng.gen_bool(0.5);
            let (route, token) = if section1 {
                (
                    "/i9/section1/{token}",
                    link_token(rng, &world.section1_link, "s1_"),
                )
            } else {
                (
                    "/account/set-password/{token}",
                    link_token(rng, &world.password_link, "pw_"),
                )
            };
            req.route = route;
            req.target = route.replace("{token}", &token);
            if section1 && rng.gen_bool(0.3) {
                req.target.push_str(&format!("?lang={}", url_part(rng)));
                if rng.gen_bool(0.3) {
                    req.target.push_str("&lang=es");
                }
            }
            if rng.gen_bool(0.6) {
                req.method = Method::POST;
                let fields = if section1 {
                    SECTION1_FIELDS
                } else {
                    &["password", "confirm"][..]
                };
                req.body = Some(form_body(rng, fields, false));
                req.headers
                    .extend(content_type(rng, "application/x-www-form-urlencoded"));
            }
        }
        92..=94 => {
            req.route = ["/healthz", "/readyz", "/metrics", "/v1/openapi.json"]
                .choose(rng)
                .unwrap();
            req.target = req.route.into();
            if rng.gen_bool(0.5) {
                req.target.push('?');
                req.target.push_str(&list_query(rng, &["format"]));
            }
            req.headers.extend(authorization(rng, world));
        }
        _ => {
            req.route = "(unknown path)";
            req.target = match rng.gen_range(0..6) {
                0 => format!("/{}", url_part(rng)),
                1 => format!("/v1/{}", url_part(rng)),
                2 => format!("/v1/employees/1/{}", url_part(rng)),
                3 => format!("/v2/employees?{}", list_query(rng, &["lastName"])),
                4 => format!("/{}", "a/".repeat(rng.gen_range(10..2_000))),
                _ => "/i9/section1/".into(),
            };
            req.method = Method::from_bytes(OTHER_METHODS.choose(rng).unwrap().as_bytes()).unwrap();
            req.headers.extend(authorization(rng, world));
        }
    }
    // Wrong methods on known routes.
    if rng.gen_bool(0.08) && req.route != "(unknown path)" {
        let method = Method::from_bytes(OTHER_METHODS.choose(rng).unwrap().as_bytes()).unwrap();
        if method != req.method {
            req.method = method;
            req.route = "(other method on a route)";
            req.hashes = false;
        }
    }
    if req.method == Method::CONNECT {
        req.method = Method::from_bytes(b"FOO").unwrap();
    }
    req.headers.extend(odd_headers(rng, n));
    req
}

/// One answer, as the run counts it.
struct Outcome {
    route: &'static str,
    method: Method,
    status: u16,
    request_id: Option<String>,
    /// Employee ids a 201 names.
    created: Option<i64>,
    problem: Option<String>,
}

fn describe(req: &Req) -> String {
    let target: String = req.target.chars().take(160).collect();
    let body = req
        .body
        .as_ref()
        .map(|b| String::from_utf8_lossy(&b[..b.len().min(160)]).into_owned())
        .unwrap_or_default();
    format!("{} {target} body={body:?}", req.method)
}

async fn send(http: &reqwest::Client, base: &str, req: &Req) -> Outcome {
    let mut b = http.request(req.method.clone(), format!("{base}{}", req.target));
    for (k, v) in &req.headers {
        b = b.header(k, v);
    }
    if let Some(body) = &req.body {
        b = b.body(body.clone());
    }
    let mut outcome = Outcome {
        route: req.route,
        method: req.method.clone(),
        status: 0,
        request_id: None,
        created: None,
        problem: None,
    };
    let r = match b.send().await {
        Ok(r) => r,
        Err(e) => {
            outcome.problem = Some(format!("no answer ({e:?}) to {}", describe(req)));
            return outcome;
        }
    };
    let status = r.status().as_u16();
    outcome.status = status;
    outcome.request_id = r
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let bytes = r.bytes().await.unwrap_or_default();
    if status >= 500 {
        outcome.problem = Some(format!(
            "{status} to {}: {}",
            describe(req),
            String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
        ));
        return outcome;
    }
    if status == 201 && (req.route == "/v1/employees" || req.route == "/v1/partners/i9s/section1") {
        outcome.created = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v["id"].as_i64());
    }
    if (400..500).contains(&status) && req.method != Method::HEAD {
        let json: Option<Value> = serde_json::from_slice(&bytes).ok();
        let problem_ok = ct.starts_with("application/problem+json")
            && json.as_ref().is_some_and(|v| {
                v["status"] == status && v["type"].is_string() && v["title"].is_string()
            });
        let oauth_ok = ct.starts_with("application/json")
            && json.as_ref().is_some_and(|v| v["error"].is_string());
        let html_ok = ct.starts_with("text/html") && bytes.starts_with(b"<!doctype html>");
        let ok = match req.family {
            Family::Token if req.method == Method::POST => oauth_ok || problem_ok,
            Family::Page => html_ok || problem_ok,
            _ => problem_ok,
        };
        if !ok {
            outcome.problem = Some(format!(
                "{status} with {ct:?} to {}: {}",
                describe(req),
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
            ));
        }
    }
    outcome
}

/// Requests no HTTP library would send, on a bare socket: the answer (if
/// the server answers rather than closing) must not be a 5xx.
fn raw_request(rng: &mut StdRng, token: &str) -> Vec<u8> {
    let targets: &[&[u8]] = &[
        b"/v1/employees?lastName=\xff\xfe",
        b"/v1/employees?lastName=\x00",
        b"/v1/employees/\xff",
        b"/i9/section1/s1_\xc3\x28",
        b"/account/set-password/\x00",
        b"/v1/employees?lastName=a b",
        b"http://example.com/v1/employees",
        b"*",
        b"/v1/../../etc/passwd",
        b"//v1//employees",
        b"/v1/employees?\"<>`{}|\\^",
    ];
    let mut target = targets.choose(rng).unwrap().to_vec();
    if rng.gen_bool(0.05) {
        target = format!("/v1/employees?lastName={}", "a".repeat(70_000)).into_bytes();
    }
    let method: &[u8] = [&b"GET"[..], b"POST", b"PATCH", b"G\x00T", b"get", b""]
        .choose(rng)
        .unwrap();
    let version: &[u8] = [
        &b"HTTP/1.1"[..],
        b"HTTP/1.0",
        b"HTTP/2.0",
        b"HTTP/1.1 extra",
        b"FOO",
    ]
    .choose(rng)
    .unwrap();
    let mut out = Vec::new();
    out.extend_from_slice(method);
    out.push(b' ');
    out.extend_from_slice(&target);
    out.push(b' ');
    out.extend_from_slice(version);
    out.extend_from_slice(b"\r\nHost: 127.0.0.1\r\n");
    out.extend_from_slice(format!("Authorization: Bearer {token}\r\n").as_bytes());
    let extra: &[&[u8]] = &[
        b"X-Nul: a\x00b\r\n",
        b"Bad Header: x\r\n",
        b": empty name\r\n",
        b"Content-Length: -1\r\n",
        b"Content-Length: 5\r\nContent-Length: 6\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"Content-Type: application/json\r\n",
        b"X-Folded: a\r\n b\r\n",
        b"Idempotency-Key: \xff\r\n",
        b"",
    ];
    out.extend_from_slice(extra.choose(rng).unwrap());
    if rng.gen_bool(0.03) {
        for i in 0..150 {
            out.extend_from_slice(format!("X-Many-{i}: v\r\n").as_bytes());
        }
    }
    // A body as long as it says (one that stops short is a test of its own).
    let body: &[u8] = [&b""[..], b"{}", b"zz\r\n", b"\x00\x00\x00\x00"]
        .choose(rng)
        .unwrap();
    if !out
        .windows(15)
        .any(|w| w.eq_ignore_ascii_case(b"content-length:"))
    {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out.extend_from_slice(body);
    out
}

/// What a raw request got: a problem (a 5xx), and the answer's request id
/// and status, to tie audit rows to it.
struct RawOutcome {
    problem: Option<String>,
    answer: Option<(String, u16)>,
}

async fn send_raw(port: u16, request: Vec<u8>) -> RawOutcome {
    let outcome = send_raw_inner(port, &request).await;
    let (status, request_id) = outcome.unwrap_or((0, None));
    RawOutcome {
        problem: (status >= 500).then(|| {
            format!(
                "{status} to raw {:?}",
                String::from_utf8_lossy(&request[..request.len().min(200)])
            )
        }),
        answer: request_id.map(|id| (id, status)),
    }
}

/// The answer's status and `x-request-id`, if one came.
async fn send_raw_inner(port: u16, request: &[u8]) -> Option<(u16, Option<String>)> {
    let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    // The server may close as soon as it has seen enough: a failed write is an answer.
    let _ = socket.write_all(request).await;
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut buf)).await;
    let head = String::from_utf8_lossy(&buf);
    let head = head.split("\r\n\r\n").next().unwrap_or_default();
    let status: u16 = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let request_id = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("x-request-id")
            .then(|| value.trim().to_owned())
    });
    Some((status, request_id))
}

/// Written to stderr itself, not captured by the test harness: the seed and
/// the table appear in every run's output, passing or not.
fn shown(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stderr().write_all(text.as_bytes());
}

async fn world(app: &TestApp) -> World {
    let ids = |sql: &'static str| async move {
        sqlx::query_scalar::<_, i64>(sql)
            .fetch_all(app.pool())
            .await
            .unwrap()
    };
    let admin = app.sign_in_with(PORTAL, ADMIN, None).await;
    let tokens = vec![
        admin["access_token"].as_str().unwrap().to_owned(),
        bearer(app, PORTAL, WEST_HR).await,
        bearer(app, REPORTING, ADMIN).await,
        bearer(app, PARTNER, ATS_BOT).await,
    ];
    let (_, section1_link) = remote_hire(app, "fz-link").await;
    let section1_link = section1_link.rsplit('/').next().unwrap().to_owned();
    // A sign-in with a set-password link, mailed by the worker.
    let hire = json!({"firstName": "Pat", "lastName": "Link", "locationId": 3, "emailAddress": "pat.link@mail.example",
                      "startDate": "2026-11-05", "createLogin": true, "sendLoginEmail": true});
    let r = app.post_json("/v1/employees", &tokens[0], &hire).await;
    assert_eq!(r.status(), 201);
    eventually("the login email arrives", || async {
        !app.smtp().to("pat.link@mail.example").is_empty()
    })
    .await;
    let mail = app.smtp().to("pat.link@mail.example").remove(0);
    let password_link = mail
        .text
        .split_whitespace()
        .find(|w| w.contains("/account/set-password/"))
        .and_then(|l| l.rsplit('/').next())
        .unwrap()
        .to_owned();
    World {
        tokens,
        refresh: admin["refresh_token"].as_str().unwrap().to_owned(),
        employee_ids: ids("SELECT id FROM employees").await,
        i9_ids: ids("SELECT id FROM i9s").await,
        group_ids: ids("SELECT id FROM groups").await,
        other_ids: ids(
            "SELECT id FROM users UNION SELECT id FROM roles UNION SELECT id FROM legal_entities",
        )
        .await,
        section1_link,
        password_link,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_bad_input_never_gets_a_5xx() {
    let seed: u64 = std::env::var("BAD_INPUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    shown(&format!(
        "bad-input seed: {seed} (BAD_INPUT_SEED={seed} replays it)\n"
    ));
    let app = spawn_stack().await;
    let world = world(&app).await;
    let max_employee: i64 = sqlx::query_scalar("SELECT COALESCE(max(id), 0) FROM employees")
        .fetch_one(app.pool())
        .await
        .unwrap();
    let max_audit: i64 = sqlx::query_scalar("SELECT COALESCE(max(id), 0) FROM audit_log")
        .fetch_one(app.pool())
        .await
        .unwrap();

    let mut rng = StdRng::seed_from_u64(seed);
    let requests: Vec<Req> = (0..REQUESTS)
        .map(|n| generate(&mut rng, &world, n))
        .collect();
    let raw: Vec<Vec<u8>> = (0..RAW_REQUESTS)
        .map(|_| raw_request(&mut rng, &world.tokens[0]))
        .collect();

    // Requests that reach password hashing go one at a time, so the token
    // endpoint is never saturated by this test (its 503 is not bad input).
    let hashing = Arc::new(tokio::sync::Mutex::new(()));
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(60))
        // A connection per request: a "no answer" is then the server's doing,
        // not a pooled connection it closed after refusing an unread body.
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let base = app.address.clone();
    let outcomes: Vec<Outcome> = stream::iter(requests.iter())
        .map(|req| {
            let (http, base, hashing) = (http.clone(), base.clone(), hashing.clone());
            async move {
                let _one = if req.hashes {
                    Some(hashing.lock().await)
                } else {
                    None
                };
                send(&http, &base, req).await
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let raw_outcomes: Vec<RawOutcome> = stream::iter(raw)
        .map(|r| send_raw(app.port, r))
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let raw_problems: Vec<&String> = raw_outcomes
        .iter()
        .filter_map(|o| o.problem.as_ref())
        .collect();

    // The table: requests by route and status.
    let mut table: BTreeMap<String, BTreeMap<u16, usize>> = BTreeMap::new();
    for o in &outcomes {
        let row = if o.route.starts_with('(') {
            o.route.to_owned()
        } else {
            format!("{} {}", o.method, o.route)
        };
        *table.entry(row).or_default().entry(o.status).or_default() += 1;
    }
    let statuses: Vec<u16> = table
        .values()
        .flat_map(|m| m.keys().copied())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut out = format!("{:<44}", "route");
    for s in &statuses {
        let _ = write!(
            out,
            "{:>6}",
            if *s == 0 {
                "none".to_owned()
            } else {
                s.to_string()
            }
        );
    }
    out.push('\n');
    for (route, counts) in &table {
        let _ = write!(out, "{route:<44}");
        for s in &statuses {
            let _ = write!(out, "{:>6}", counts.get(s).copied().unwrap_or(0));
        }
        out.push('\n');
    }
    shown(&format!(
        "{out}{} requests, {} raw (seed {seed})\n",
        outcomes.len(),
        RAW_REQUESTS
    ));

    let problems: Vec<&String> = outcomes.iter().filter_map(|o| o.problem.as_ref()).collect();
    assert!(
        problems.is_empty() && raw_problems.is_empty(),
        "seed {seed}: {} bad answers, {} raw; first: {:#?} {:#?}",
        problems.len(),
        raw_problems.len(),
        problems.iter().take(10).collect::<Vec<_>>(),
        raw_problems.iter().take(5).collect::<Vec<_>>()
    );
    assert!(outcomes.len() >= 10_000);
    assert!(table.len() >= 25, "every route: {table:?}");
    let accepted = outcomes.iter().filter(|o| o.status < 300).count();
    let refused = outcomes
        .iter()
        .filter(|o| (400..500).contains(&o.status))
        .count();
    // Mostly bad input, and enough good input to reach storage.
    assert!(
        refused > REQUESTS / 2 && accepted > 100,
        "{accepted} accepted, {refused} refused"
    );

    // Nothing half-written: every new employee is one a 201 named, and every
    // audit row belongs to a request that succeeded.
    let new_employees: HashSet<i64> = sqlx::query_scalar("SELECT id FROM employees WHERE id > $1")
        .bind(max_employee)
        .fetch_all(app.pool())
        .await
        .unwrap()
        .into_iter()
        .collect();
    let created: HashSet<i64> = outcomes.iter().filter_map(|o| o.created).collect();
    assert_eq!(
        new_employees, created,
        "seed {seed}: employees written = employees created"
    );
    let by_request: HashMap<&str, u16> = outcomes
        .iter()
        .filter_map(|o| o.request_id.as_deref().map(|id| (id, o.status)))
        .chain(
            raw_outcomes
                .iter()
                .filter_map(|o| o.answer.as_ref().map(|(id, s)| (id.as_str(), *s))),
        )
        .collect();
    let audit: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT action, request_id FROM audit_log WHERE id > $1")
            .bind(max_audit)
            .fetch_all(app.pool())
            .await
            .unwrap();
    let mut untied = Vec::new();
    for (action, request_id) in &audit {
        match request_id.as_deref().and_then(|id| by_request.get(id)) {
            // A success (a signed Section 1 may answer 303, on to the return URL).
            Some(status) => assert!(
                (200..300).contains(status) || *status == 303,
                "seed {seed}: a {action} audit row for a request answered {status}"
            ),
            None => untied.push((action, request_id)),
        }
    }
    // Every write's audit row names its request, the pages' own included.
    assert!(
        untied.is_empty(),
        "seed {seed}: audit rows of no request sent: {untied:?}"
    );
    assert!(
        created.len() > 10,
        "some writes were accepted: {}",
        created.len()
    );
}
