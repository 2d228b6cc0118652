//! The I-9 lifecycle after Section 1 (docs/api.md, "The I-9 lifecycle"):
//! `POST /v1/i9s/{id}/section2`, `/complete`, `/park` (permission 4) and
//! `/approve` (permission 5). Each answers 200 with the updated I-9; a step
//! the current status does not allow is a 409. The steps themselves, and the
//! state machine they follow, are in `i9_common::models::i9`: a handler here
//! extracts, authorizes, calls and answers.

use axum::{body::Bytes, extract::State, http::HeaderMap, Json};
use chrono::{NaiveDate, Utc};
use i9_common::{
    domain::{parse_date, Permission, Scope},
    models::i9::{self as lifecycle, Document, Documents, Employer, Section2 as Section2Input},
};
use serde_json::{Map, Value};

use super::{i9s, Id};
use crate::{
    auth::Caller,
    error::{ApiError, ApiResult, FieldError, Problem},
    state::AppState,
};

/// Documents each list accepts (the Form I-9 "Lists of Acceptable Documents").
pub const LIST_A: &[&str] = &[
    "U.S. Passport",
    "U.S. Passport Card",
    "Permanent Resident Card (Form I-551)",
    "Foreign Passport with I-551 Stamp",
    "Employment Authorization Document (Form I-766)",
    "Foreign Passport with Form I-94",
    "Passport from FSM or RMI with Form I-94",
];
pub const LIST_B: &[&str] = &[
    "Driver's License",
    "State ID Card",
    "Federal or Local Government ID Card",
    "School ID Card",
    "Voter Registration Card",
    "U.S. Military Card",
    "Military Dependent's ID Card",
    "U.S. Coast Guard Merchant Mariner Card",
    "Native American Tribal Document",
    "Canadian Driver's License",
];
pub const LIST_C: &[&str] = &[
    "Social Security Card",
    "Certification of Report of Birth (Form DS-1350, FS-545, FS-240)",
    "Birth Certificate",
    "Native American Tribal Document",
    "U.S. Citizen ID Card (Form I-197)",
    "Identification Card for Use of Resident Citizen (Form I-179)",
    "Employment Authorization Document issued by DHS",
];

/// One document group of the body (`listA1Doc`, …).
struct DocGroup {
    prefix: &'static str,
    titles: &'static [&'static str],
}

const GROUPS: [DocGroup; 5] = [
    DocGroup {
        prefix: "listA1Doc",
        titles: LIST_A,
    },
    DocGroup {
        prefix: "listA2Doc",
        titles: LIST_A,
    },
    DocGroup {
        prefix: "listA3Doc",
        titles: LIST_A,
    },
    DocGroup {
        prefix: "listBDoc",
        titles: LIST_B,
    },
    DocGroup {
        prefix: "listCDoc",
        titles: LIST_C,
    },
];

const EMPLOYER: &[(&str, usize, bool)] = &[
    ("employerFirstName", 40, true),
    ("employerLastName", 40, true),
    ("employerTitle", 80, true),
    ("employerBusiness", 100, true),
    ("employerAddress", 80, false),
    ("employerCity", 50, false),
    ("employerState", 20, false),
    ("employerZip", 10, false),
];

#[derive(Default, Debug)]
struct Doc {
    title: Option<String>,
    issuer: Option<String>,
    number: Option<String>,
    expiration: Option<NaiveDate>,
}

impl Doc {
    /// The document, when its title, issuer and number are all given.
    fn whole(self) -> Option<Document> {
        Some(Document {
            title: self.title?,
            issuer: self.issuer?,
            number: self.number?,
            expiration: self.expiration,
        })
    }
}

/// Section 2: the documents (List A, or List B and List C), the employer
/// representative, and the representative's signature (their name, typed).
#[derive(utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "listBDocTitle": "Driver's License", "listBDocIssuer": "Oregon DMV", "listBDocNumber": "D1234567",
    "listBDocExpiration": "2030-04-01", "listCDocTitle": "Social Security Card", "listCDocIssuer": "SSA",
    "listCDocNumber": "on file", "employerFirstName": "Wes", "employerLastName": "Turner",
    "employerTitle": "HR Manager", "employerBusiness": "Acme Staffing US LLC", "employerSignature": "Wes Turner"
}))]
#[allow(non_snake_case, dead_code)]
pub struct Section2 {
    /// A List A document (also `listA2Doc*`, `listA3Doc*` for a combination such as a passport with Form I-94).
    listA1DocTitle: Option<String>,
    listA1DocIssuer: Option<String>,
    listA1DocNumber: Option<String>,
    /// `YYYY-MM-DD` or `MM/DD/YYYY`; not in the past.
    listA1DocExpiration: Option<String>,
    listBDocTitle: Option<String>,
    listBDocIssuer: Option<String>,
    listBDocNumber: Option<String>,
    listBDocExpiration: Option<String>,
    listCDocTitle: Option<String>,
    listCDocIssuer: Option<String>,
    listCDocNumber: Option<String>,
    listCDocExpiration: Option<String>,
    employerFirstName: String,
    employerLastName: String,
    employerTitle: String,
    employerBusiness: String,
    employerAddress: Option<String>,
    employerCity: Option<String>,
    employerState: Option<String>,
    employerZip: Option<String>,
    /// The representative's electronic signature: their first and last name as given above.
    employerSignature: String,
}

/// A park's optional reason.
#[derive(utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case, dead_code)]
pub struct Park {
    /// Why the I-9 is parked (max 500), kept in `i9Notes`.
    #[schema(max_length = 500, pattern = r"^[^\u0000]*$")]
    i9Notes: Option<String>,
}

fn body_object(headers: &HeaderMap, body: &[u8], optional: bool) -> ApiResult<Map<String, Value>> {
    if optional && body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    crate::body::json_object(headers, body)
}

fn text(
    obj: &Map<String, Value>,
    key: &str,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) if s.trim().chars().count() > max => {
            errors.push(FieldError::new(
                key,
                "too_long",
                format!("At most {max} characters."),
            ));
            None
        }
        Some(Value::String(s)) => Some(s.trim().to_owned()),
        Some(_) => {
            errors.push(FieldError::new(key, "invalid_type", "Must be a string."));
            None
        }
    }
}

/// Check a Section 2 body; every problem is named.
fn parse_section2(
    obj: &Map<String, Value>,
    today: NaiveDate,
) -> Result<Section2Input, Vec<FieldError>> {
    let mut errors = Vec::new();
    let known = |k: &str| {
        GROUPS.iter().any(|g| {
            ["Title", "Issuer", "Number", "Expiration"]
                .iter()
                .any(|s| k == format!("{}{s}", g.prefix))
        }) || EMPLOYER.iter().any(|(n, _, _)| *n == k)
            || k == "employerSignature"
    };
    for k in obj.keys().filter(|k| !known(k)) {
        errors.push(FieldError::new(
            k,
            "unknown_field",
            "Not a field of Section 2.",
        ));
    }
    let mut docs = Vec::new();
    for g in &GROUPS {
        let f = |s: &str| format!("{}{s}", g.prefix);
        let present = ["Title", "Issuer", "Number", "Expiration"]
            .iter()
            .any(|s| obj.get(&f(s)).is_some_and(|v| !v.is_null()));
        if !present {
            docs.push(None);
            continue;
        }
        let title_key = f("Title");
        let mut doc = Doc {
            title: text(obj, &title_key, 100, &mut errors),
            issuer: text(obj, &f("Issuer"), 100, &mut errors),
            number: text(obj, &f("Number"), 50, &mut errors),
            expiration: None,
        };
        match &doc.title {
            None => errors.push(FieldError::new(
                &title_key,
                "required",
                "Name the document.",
            )),
            Some(t) if !g.titles.contains(&t.as_str()) => errors.push(FieldError::new(
                &title_key,
                "invalid_value",
                format!(
                    "Not a document of this list. Accepted: {}.",
                    g.titles.join("; ")
                ),
            )),
            _ => {}
        }
        if doc.issuer.is_none() {
            errors.push(FieldError::new(
                f("Issuer"),
                "required",
                "Give the issuing authority.",
            ));
        }
        if doc.number.is_none() {
            errors.push(FieldError::new(
                f("Number"),
                "required",
                "Give the document number.",
            ));
        }
        let exp_key = f("Expiration");
        if let Some(raw) = text(obj, &exp_key, 10, &mut errors) {
            match parse_date(&raw) {
                Ok(d) if d < today => errors.push(FieldError::new(
                    &exp_key,
                    "expired",
                    "The document has expired.",
                )),
                Ok(d) => doc.expiration = Some(d),
                Err(e) => errors.push(FieldError::new(&exp_key, "invalid_date", format!("{e}."))),
            }
        }
        docs.push(Some(doc));
    }
    let (a1, a2, a3, b, c) = (
        docs[0].is_some(),
        docs[1].is_some(),
        docs[2].is_some(),
        docs[3].is_some(),
        docs[4].is_some(),
    );
    if (a2 || a3) && !a1 {
        errors.push(FieldError::new(
            "listA1DocTitle",
            "required",
            "Further List A documents go with a first one.",
        ));
    }
    if a1 && (b || c) {
        for k in [
            "listA1DocTitle",
            if b { "listBDocTitle" } else { "listCDocTitle" },
        ] {
            errors.push(FieldError::new(
                k,
                "combination",
                "Record List A, or List B and List C, not both.",
            ));
        }
    } else if !a1 && b && !c {
        errors.push(FieldError::new(
            "listCDocTitle",
            "required",
            "A List B document goes with a List C document.",
        ));
    } else if !a1 && c && !b {
        errors.push(FieldError::new(
            "listBDocTitle",
            "required",
            "A List C document goes with a List B document.",
        ));
    } else if !a1 && !b && !c && !a2 && !a3 {
        errors.push(FieldError::new(
            "listA1DocTitle",
            "required",
            "Record a List A document, or List B and List C documents.",
        ));
    }
    let mut employer = Vec::new();
    for (name, max, required) in EMPLOYER {
        match text(obj, name, *max, &mut errors) {
            Some(v) => employer.push((*name, v)),
            None if *required && !errors.iter().any(|e| e.field == *name) => {
                errors.push(FieldError::new(*name, "required", "Required."))
            }
            None => {}
        }
    }
    let get = |n: &str| {
        employer
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, v)| v.clone())
    };
    match text(obj, "employerSignature", 100, &mut errors) {
        None => errors.push(FieldError::new(
            "employerSignature",
            "required",
            "Sign by typing your first and last name.",
        )),
        Some(sig) => {
            if let (Some(first), Some(last)) = (get("employerFirstName"), get("employerLastName")) {
                let expected = format!("{first} {last}");
                let normal = |s: &str| {
                    s.split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                        .to_lowercase()
                };
                if normal(&sig) != normal(&expected) {
                    errors.push(FieldError::new(
                        "employerSignature",
                        "signature_mismatch",
                        "Type your first and last name exactly as given in employerFirstName and employerLastName.",
                    ));
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Checked above: each document given is whole, and they form List A, or
    // List B and List C.
    let mut docs = docs.into_iter().map(|d| d.and_then(Doc::whole));
    let mut next = || docs.next().flatten();
    let (a1, a2, a3, b, c) = (next(), next(), next(), next(), next());
    let documents = match (a1, b, c) {
        (Some(first), None, None) => Documents::ListA {
            first,
            second: a2,
            third: a3,
        },
        (None, Some(b), Some(c)) => Documents::ListBAndC { b, c },
        _ => {
            return Err(vec![FieldError::new(
                "listA1DocTitle",
                "required",
                "Record a List A document, or List B and List C documents.",
            )])
        }
    };
    let employer = Employer {
        first_name: get("employerFirstName").unwrap_or_default(),
        last_name: get("employerLastName").unwrap_or_default(),
        title: get("employerTitle").unwrap_or_default(),
        business: get("employerBusiness").unwrap_or_default(),
        address: get("employerAddress"),
        city: get("employerCity"),
        state: get("employerState"),
        zip: get("employerZip"),
    };
    Ok(Section2Input {
        documents,
        employer,
        signed_on: today,
    })
}

#[utoipa::path(
    post, path = "/v1/i9s/{id}/section2", operation_id = "signSection2", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    request_body(content = Section2, content_type = "application/json"),
    responses(
        (status = 200, description = "Section 2 recorded; the I-9 is Signed Sec 2", body = i9s::I9Record),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The I-9 is not Signed Sec 1", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn section2(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<i9s::I9Record>> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let id = id.get()?;
    i9s::check_visible(&state, &caller, id).await?;
    let obj = body_object(&headers, &body, false)?;
    let today = Utc::now().date_naive();
    let section2 = parse_section2(&obj, today).map_err(ApiError::Validation)?;
    let mut tx = state.pool.begin().await?;
    lifecycle::record_section2(&mut tx, &caller.actor(), id, &section2, base_url(&state)).await?;
    tx.commit().await?;
    Ok(Json(i9s::load(&state, &caller, id).await?))
}

/// Where the partner events' links point.
fn base_url(state: &AppState) -> &str {
    &state.config.public_base_url
}

#[utoipa::path(
    post, path = "/v1/i9s/{id}/complete", operation_id = "completeI9", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    responses(
        (status = 200, description = "The I-9 is Completed", body = i9s::I9Record),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The I-9 is not Signed Sec 2", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn complete(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<i9s::I9Record>> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let id = id.get()?;
    i9s::check_visible(&state, &caller, id).await?;
    let mut tx = state.pool.begin().await?;
    lifecycle::complete(&mut tx, &caller.actor(), id, base_url(&state)).await?;
    tx.commit().await?;
    Ok(Json(i9s::load(&state, &caller, id).await?))
}

#[utoipa::path(
    post, path = "/v1/i9s/{id}/approve", operation_id = "approveI9", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    responses(
        (status = 200, description = "The I-9 is Approved", body = i9s::I9Record),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The I-9 is not Completed", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn approve(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<i9s::I9Record>> {
    caller.require(Scope::Write, Permission::ApproveI9s)?;
    let id = id.get()?;
    i9s::check_visible(&state, &caller, id).await?;
    let mut tx = state.pool.begin().await?;
    lifecycle::approve(&mut tx, &caller.actor(), id, base_url(&state)).await?;
    tx.commit().await?;
    Ok(Json(i9s::load(&state, &caller, id).await?))
}

#[utoipa::path(
    post, path = "/v1/i9s/{id}/park", operation_id = "parkI9", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    request_body(content = Option<Park>, content_type = "application/json", description = "Optional: an empty body parks without a reason"),
    responses(
        (status = 200, description = "The I-9 is Parked", body = i9s::I9Record),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The I-9 is Approved or already Parked", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn park(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<i9s::I9Record>> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let id = id.get()?;
    let obj = body_object(&headers, &body, true)?;
    let mut errors = Vec::new();
    for k in obj.keys().filter(|k| *k != "i9Notes") {
        errors.push(FieldError::new(
            k,
            "unknown_field",
            "A park takes only i9Notes.",
        ));
    }
    let notes = text(&obj, "i9Notes", 500, &mut errors);
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    i9s::check_visible(&state, &caller, id).await?;
    let mut tx = state.pool.begin().await?;
    lifecycle::park(
        &mut tx,
        &caller.actor(),
        id,
        notes.as_deref(),
        base_url(&state),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(i9s::load(&state, &caller, id).await?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 22).unwrap()
    }

    fn employer() -> Value {
        json!({"employerFirstName": "Wes", "employerLastName": "Turner", "employerTitle": "HR Manager",
               "employerBusiness": "Acme", "employerSignature": "wes  turner"})
    }

    fn with(extra: Value) -> Map<String, Value> {
        let mut m = employer().as_object().unwrap().clone();
        m.extend(extra.as_object().unwrap().clone());
        m
    }

    fn codes(r: Result<Section2Input, Vec<FieldError>>) -> Vec<(String, &'static str)> {
        r.err()
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.field, e.code))
            .collect()
    }

    #[test]
    fn list_a_alone_or_b_with_c() {
        let a = with(
            json!({"listA1DocTitle": "U.S. Passport", "listA1DocIssuer": "U.S. Department of State",
                            "listA1DocNumber": "123", "listA1DocExpiration": "2030-01-01"}),
        );
        let parsed = parse_section2(&a, today()).unwrap();
        assert!(matches!(
            parsed.documents,
            Documents::ListA { ref first, second: None, third: None } if first.title == "U.S. Passport"
        ));
        assert_eq!(parsed.employer.last_name, "Turner");
        assert_eq!(parsed.employer.address, None);
        assert_eq!(parsed.signed_on, today());
        let bc = with(
            json!({"listBDocTitle": "Driver's License", "listBDocIssuer": "OR", "listBDocNumber": "1",
                             "listCDocTitle": "Social Security Card", "listCDocIssuer": "SSA", "listCDocNumber": "2"}),
        );
        let parsed = parse_section2(&bc, today()).unwrap();
        assert!(matches!(
            parsed.documents,
            Documents::ListBAndC { ref b, ref c } if b.number == "1" && c.number == "2"
        ));
    }

    #[test]
    fn wrong_combinations_are_named() {
        let ab = with(
            json!({"listA1DocTitle": "U.S. Passport", "listA1DocIssuer": "DoS", "listA1DocNumber": "1",
                             "listBDocTitle": "Driver's License", "listBDocIssuer": "OR", "listBDocNumber": "1"}),
        );
        assert_eq!(
            codes(parse_section2(&ab, today())),
            [
                ("listA1DocTitle".into(), "combination"),
                ("listBDocTitle".into(), "combination")
            ]
        );
        let b = with(
            json!({"listBDocTitle": "Driver's License", "listBDocIssuer": "OR", "listBDocNumber": "1"}),
        );
        assert_eq!(
            codes(parse_section2(&b, today())),
            [("listCDocTitle".into(), "required")]
        );
        assert_eq!(
            codes(parse_section2(&with(json!({})), today())),
            [("listA1DocTitle".into(), "required")]
        );
        let wrong_list = with(
            json!({"listA1DocTitle": "Social Security Card", "listA1DocIssuer": "SSA", "listA1DocNumber": "1"}),
        );
        assert_eq!(
            codes(parse_section2(&wrong_list, today())),
            [("listA1DocTitle".into(), "invalid_value")]
        );
    }

    #[test]
    fn expired_documents_and_bad_signatures_are_refused() {
        let old = with(
            json!({"listA1DocTitle": "U.S. Passport", "listA1DocIssuer": "DoS", "listA1DocNumber": "1",
                              "listA1DocExpiration": "11/21/2026", "employerSignature": "Someone Else"}),
        );
        assert_eq!(
            codes(parse_section2(&old, today())),
            [
                ("listA1DocExpiration".into(), "expired"),
                ("employerSignature".into(), "signature_mismatch")
            ]
        );
    }
}
