//! Supplement B of Form I-9, "Reverification and Rehire"
//! (docs/reverification.md): `POST /v1/i9s/{id}/reverify`, `POST
//! /v1/i9s/{id}/receipt-update` (permission 4) and `GET
//! /v1/i9s/{id}/supplement-b`. The rules are in
//! `i9_common::models::supplement_b`; a handler here extracts, authorizes,
//! calls and answers, as the other steps (`routes/i9_steps.rs`). A rehire
//! is recorded by the employee re-hire itself (`rehireI9: "supplementB"`,
//! `routes/employees/write.rs`).

use std::{collections::BTreeSet, sync::OnceLock};

use axum::{extract::State, Json};
use chrono::{DateTime, NaiveDate, Utc};
use i9_common::{
    domain::{
        fields::{CalendarDate, Text},
        signature::signs_as,
        Field, FromJson, Invalid, Permission, Required, Scope,
    },
    models::supplement_b::{
        self as model, expiration_required, DocumentList, Kind, NewName, Presented, Recorded,
        Reverification, Signed,
    },
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgConnection;
use utoipa::{openapi::RefOr, openapi::Schema, PartialSchema, ToSchema};

use super::{
    i9_steps::{self, DocumentIssuer, DocumentNumber, ListA, ListB, ListC, Signature},
    i9s, Id,
};
use crate::{
    auth::Caller,
    body::{properties, JsonBody, Problems, RequestBody},
    error::{ApiResult, FieldError, Problem},
    format,
    state::AppState,
};

/// The document presented for Supplement B: a List A or a List C title; a
/// List B title only as the replacement of a List B document shown as a
/// receipt in Section 2 (`receipt-update`). Elsewhere a List B title is
/// refused by name (`list_b`, [`SupplementB::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SupplementBTitle {
    A(ListA),
    B(ListB),
    C(ListC),
}

impl SupplementBTitle {
    fn titles() -> Vec<&'static str> {
        ListA::TITLES
            .iter()
            .chain(ListB::TITLES)
            .chain(ListC::TITLES)
            .copied()
            .collect()
    }

    fn list(self) -> DocumentList {
        match self {
            Self::A(_) => DocumentList::A,
            Self::B(_) => DocumentList::B,
            Self::C(_) => DocumentList::C,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::A(a) => a.title(),
            Self::B(b) => b.title(),
            Self::C(c) => c.title(),
        }
    }
}

impl FromJson for SupplementBTitle {
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        if let Ok(a) = ListA::from_json(value) {
            return Ok(Self::A(a));
        }
        // List C before List B: a title on both (Native American Tribal
        // Document) is the List C document, the one that reverifies.
        if let Ok(c) = ListC::from_json(value) {
            return Ok(Self::C(c));
        }
        if let Ok(b) = ListB::from_json(value) {
            return Ok(Self::B(b));
        }
        if !value.is_string() {
            return Err(Invalid::new("invalid_type", "Must be a string."));
        }
        Err(Invalid::new(
            "invalid_value",
            format!(
                "Not a document of Form I-9's lists. Accepted (in any letter case): {}.",
                Self::titles().join("; ")
            ),
        ))
    }
}

impl PartialSchema for SupplementBTitle {
    fn schema() -> RefOr<Schema> {
        i9_steps::title_schema(&Self::titles())
    }
}

impl ToSchema for SupplementBTitle {}

pub type EmployerName = Text<80>;
pub type NewPersonName = Text<40>;
pub type MiddleInitial = Text<1>;
pub type AdditionalInformation = Text<500>;

/// The body of `POST /v1/i9s/{id}/reverify` and `POST
/// /v1/i9s/{id}/receipt-update`: the fields of Form I-9 Supplement B
/// (edition 01/20/25). A blank string means null.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({
    "documentTitle": "Employment Authorization Document (Form I-766)", "documentNumber": "SRC2612345678",
    "documentExpiration": "2028-11-30", "employerName": "Wes Turner", "employerSignature": "Wes Turner"
}))]
pub struct SupplementB {
    /// "New Name (if applicable)": the last name, when it changed.
    #[serde(default)]
    #[schema(inline)]
    pub new_last_name: Field<NewPersonName>,
    #[serde(default)]
    #[schema(inline)]
    pub new_first_name: Field<NewPersonName>,
    #[serde(default)]
    #[schema(inline)]
    pub new_middle_initial: Field<MiddleInitial>,
    /// "Document Title": a List A or a List C document, never List B. Required.
    #[schema(inline)]
    pub document_title: Required<SupplementBTitle>,
    /// The issuing authority (not a field of Supplement B; kept when given).
    #[serde(default)]
    #[schema(inline)]
    pub document_issuer: Field<DocumentIssuer>,
    /// "Document Number". Required.
    #[schema(inline)]
    pub document_number: Required<DocumentNumber>,
    /// "Expiration Date (if any)": not in the past; not with a receipt (its
    /// validity is the 90 days).
    #[serde(default)]
    #[schema(inline)]
    pub document_expiration: Field<CalendarDate>,
    /// `true`: the employee presents a receipt for the replacement of a
    /// lost, stolen or damaged document, valid 90 days (reverify only).
    #[serde(default)]
    #[schema(inline)]
    pub document_receipt: Field<bool>,
    /// "Name of Employer or Authorized Representative". Required.
    #[schema(inline)]
    pub employer_name: Required<EmployerName>,
    /// The representative's electronic signature: `employerName` typed
    /// again (case and spacing aside). Required.
    #[schema(inline)]
    pub employer_signature: Required<Signature>,
    /// "Additional Information".
    #[serde(default)]
    #[schema(inline)]
    pub additional_information: Field<AdditionalInformation>,
    /// The box "used an alternative procedure authorized by DHS to examine
    /// documents": only for an employee whose legal entity is an E-Verify
    /// employer in good standing.
    #[serde(default)]
    #[schema(inline)]
    pub alternative_procedure: Field<bool>,
}

impl RequestBody for SupplementB {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        FieldError::new(name, "unknown_field", "Not a field of Supplement B.")
    }
}

impl SupplementB {
    /// Every field checked (`today`: the day of signing, which no
    /// expiration may precede; `kind`: a receipt update takes the real
    /// document, not another receipt). `Err` names every problem.
    pub fn check(self, today: NaiveDate, kind: Kind) -> Result<Reverification, Vec<FieldError>> {
        let mut p = Problems::default();
        let new_name = NewName {
            last_name: p
                .optional("newLastName", self.new_last_name)
                .map(Text::into_string),
            first_name: p
                .optional("newFirstName", self.new_first_name)
                .map(Text::into_string),
            middle_initial: p
                .optional("newMiddleInitial", self.new_middle_initial)
                .map(Text::into_string),
        };
        let title = match p.required("documentTitle", self.document_title) {
            Some(SupplementBTitle::B(_)) if kind != Kind::ReceiptUpdate => {
                p.push(
                    "documentTitle",
                    Invalid::new(
                        "list_b",
                        "A List B document proves identity only: it is never used to reverify. \
                         Present a List A or a List C document.",
                    ),
                );
                None
            }
            title => title,
        };
        let issuer = p.optional("documentIssuer", self.document_issuer);
        let number = p.required("documentNumber", self.document_number);
        let receipt = p
            .optional("documentReceipt", self.document_receipt)
            .unwrap_or(false);
        let expiration = match p.optional("documentExpiration", self.document_expiration) {
            Some(CalendarDate(d)) if d < today => {
                p.push(
                    "documentExpiration",
                    Invalid::new("expired", "The document has expired."),
                );
                None
            }
            Some(CalendarDate(_)) if receipt => {
                p.push(
                    "documentExpiration",
                    Invalid::new(
                        "receipt",
                        "A receipt is valid 90 days; give the expiration with the real document.",
                    ),
                );
                None
            }
            d => d.map(|d| d.0),
        };
        // One given but refused (expired) is not also missing.
        if let Some(message) = title
            .filter(|_| expiration.is_none() && !p.names("documentExpiration"))
            .and_then(|t| expiration_required(t.title(), receipt))
        {
            p.push("documentExpiration", Invalid::new("required", message));
        }
        if receipt && kind == Kind::ReceiptUpdate {
            p.push(
                "documentReceipt",
                Invalid::new(
                    "receipt",
                    "The real document replaces the receipt: record it, not another receipt.",
                ),
            );
        }
        let employer_name = p.required("employerName", self.employer_name);
        let signature = match self.employer_signature.get() {
            Err(e) if e.code == "required" => {
                p.push(
                    "employerSignature",
                    Invalid::new("required", "Sign by typing your name as in employerName."),
                );
                None
            }
            Err(e) => {
                p.push("employerSignature", e);
                None
            }
            Ok(signature) => {
                if let Some(name) = &employer_name {
                    if !signs_as(signature.as_str(), name.as_str()) {
                        p.push(
                            "employerSignature",
                            Invalid::new(
                                "signature_mismatch",
                                "Type your name exactly as given in employerName.",
                            ),
                        );
                    }
                }
                Some(signature)
            }
        };
        let additional_information = p
            .optional("additionalInformation", self.additional_information)
            .map(Text::into_string);
        let alternative_procedure = p
            .optional("alternativeProcedure", self.alternative_procedure)
            .unwrap_or(false);
        let (Some(title), Some(number), Some(employer_name), Some(signature)) =
            (title, number, employer_name, signature)
        else {
            return Err(p.into_errors());
        };
        p.finish(Reverification {
            document: Presented {
                list: title.list(),
                title: title.title().to_owned(),
                issuer: issuer.map(Text::into_string),
                number: number.into_string(),
                expiration,
                receipt,
            },
            new_name,
            signed: Signed {
                // As typed (docs/reverification.md): the signature, not the name.
                employer_signature: signature.into_string(),
                employer_name: employer_name.into_string(),
                signed_on: today,
            },
            additional_information,
            alternative_procedure,
        })
    }
}

/// One Supplement B entry of an I-9, as recorded.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupplementBEntry {
    pub id: i64,
    /// `reverification`, `rehire` or `receipt_update`.
    #[schema(example = "reverification")]
    pub kind: String,
    /// "Date of Rehire", for a `rehire`.
    pub rehire_date: Option<NaiveDate>,
    pub new_last_name: Option<String>,
    pub new_first_name: Option<String>,
    pub new_middle_initial: Option<String>,
    /// `A` or `C`: the list of the document presented; `null` for a rehire without one.
    pub document_list: Option<String>,
    pub document_title: Option<String>,
    pub document_issuer: Option<String>,
    pub document_number: Option<String>,
    pub document_expiration: Option<NaiveDate>,
    /// Whether the document is a receipt for a lost, stolen or damaged one.
    pub document_receipt: bool,
    /// For a receipt: the day the real document was due (90 days on).
    pub receipt_due_date: Option<NaiveDate>,
    pub employer_name: String,
    pub employer_signature: String,
    /// "Today's Date": the day it was signed.
    pub signed_date: NaiveDate,
    pub additional_information: Option<String>,
    pub alternative_procedure: bool,
    /// For a rehire: the period of employment the I-9 covered before.
    pub previous_employment_period_id: Option<i64>,
    /// For a rehire: the new period, the one the I-9 covers since.
    pub employment_period_id: Option<i64>,
    /// The I-9's `i9Expiration` as this entry left it.
    pub i9_expiration: Option<NaiveDate>,
    /// The user who recorded it (`/v1/users/{id}`); `null` for an API client without a user.
    pub recorded_by_user_id: Option<i64>,
    /// When it was recorded (UTC).
    #[serde(serialize_with = "format::timestamp")]
    #[schema(value_type = String, example = "2026-11-22T14:03:07.123456")]
    pub recorded_at: Option<DateTime<Utc>>,
}

impl From<Recorded> for SupplementBEntry {
    fn from(r: Recorded) -> Self {
        Self {
            id: r.id,
            kind: r.kind,
            rehire_date: r.rehire_date,
            new_last_name: r.new_last_name,
            new_first_name: r.new_first_name,
            new_middle_initial: r.new_middle_initial,
            document_list: r.document_list,
            document_title: r.document_title,
            document_issuer: r.document_issuer,
            document_number: r.document_number,
            document_expiration: r.document_expiration,
            document_receipt: r.receipt,
            receipt_due_date: r.receipt_due_date,
            employer_name: r.employer_name,
            employer_signature: r.employer_signature,
            signed_date: r.signed_on,
            additional_information: r.additional_information,
            alternative_procedure: r.alternative_procedure,
            previous_employment_period_id: r.previous_employment_period_id,
            employment_period_id: r.employment_period_id,
            i9_expiration: r.i9_expiration,
            recorded_by_user_id: r.recorded_by_user_id,
            recorded_at: Some(r.recorded_at),
        }
    }
}

/// The entries of I-9 `id`, oldest first (for the record view too).
pub async fn entries(conn: &mut PgConnection, id: i64) -> ApiResult<Vec<SupplementBEntry>> {
    Ok(model::of_i9(conn, id)
        .await?
        .into_iter()
        .map(SupplementBEntry::from)
        .collect())
}

async fn record(
    state: &AppState,
    caller: &Caller,
    id: Id,
    body: JsonBody<SupplementB>,
    kind: Kind,
) -> ApiResult<Json<i9s::I9Record>> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let id = id.get()?;
    i9s::check_visible(state, caller, id).await?;
    let today = state.config.today();
    let entry = body.check(|b: SupplementB| b.check(today, kind))?;
    let mut tx = state.pool.begin().await?;
    model::reverify(&mut tx, &caller.actor(), id, kind, &entry).await?;
    tx.commit().await?;
    Ok(Json(i9s::load(state, caller, id).await?))
}

#[utoipa::path(
    post, path = "/v1/i9s/{id}/reverify", operation_id = "reverifyI9", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    request_body(content = SupplementB, content_type = "application/json"),
    responses(
        (status = 200, description = "Supplement B recorded; `i9Expiration` (and `receiptDueDate` for a receipt) recomputed", body = i9s::I9Record),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The I-9 is not Completed or Approved, or a receipt is pending", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field named; or the employee or document is never reverified (a U.S. citizen or noncitizen national, a permanent resident, a U.S. passport or Permanent Resident Card, a List B document), each saying why", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn reverify(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    body: JsonBody<SupplementB>,
) -> ApiResult<Json<i9s::I9Record>> {
    record(&state, &caller, id, body, Kind::Reverification).await
}

#[utoipa::path(
    post, path = "/v1/i9s/{id}/receipt-update", operation_id = "updateI9Receipt", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    request_body(content = SupplementB, content_type = "application/json"),
    responses(
        (status = 200, description = "The real document recorded; `receiptDueDate` cleared, `i9Expiration` recomputed", body = i9s::I9Record),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The I-9 is not Completed or Approved, or no receipt is pending", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn receipt_update(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    body: JsonBody<SupplementB>,
) -> ApiResult<Json<i9s::I9Record>> {
    record(&state, &caller, id, body, Kind::ReceiptUpdate).await
}

#[utoipa::path(
    get, path = "/v1/i9s/{id}/supplement-b", operation_id = "listSupplementB", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    responses(
        (status = 200, description = "Every Supplement B entry of the I-9, oldest first", body = Vec<SupplementBEntry>),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such I-9, or its employee is not in the caller's groups", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<Vec<SupplementBEntry>>> {
    caller.require(Scope::Read, Permission::ViewI9s)?;
    let id = id.get()?;
    i9s::check_visible(&state, &caller, id).await?;
    let mut conn = state.pool.acquire().await?;
    Ok(Json(entries(&mut conn, id).await?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 12, 15).unwrap()
    }

    fn parse(v: Value, kind: Kind) -> Result<Reverification, Vec<(String, &'static str)>> {
        let mut body = json!({"documentNumber": "1", "employerName": "Wes Turner",
                              "employerSignature": "wes turner"});
        body.as_object_mut()
            .unwrap()
            .extend(v.as_object().unwrap().clone());
        serde_json::from_value::<SupplementB>(body)
            .unwrap()
            .check(today(), kind)
            .map_err(|e| e.into_iter().map(|e| (e.field, e.code)).collect())
    }

    #[test]
    fn list_a_or_list_c_never_list_b() {
        let a = parse(
            json!({"documentTitle": "employment authorization document (form i-766)",
                   "documentExpiration": "2099-01-01"}),
            Kind::Reverification,
        )
        .unwrap();
        assert_eq!(a.document.list, DocumentList::A);
        assert_eq!(
            a.document.title,
            "Employment Authorization Document (Form I-766)"
        );
        let c = parse(
            json!({"documentTitle": "Native American Tribal Document"}),
            Kind::Reverification,
        )
        .unwrap();
        assert_eq!(c.document.list, DocumentList::C);
        assert_eq!(
            parse(
                json!({"documentTitle": "Driver's License"}),
                Kind::Reverification
            )
            .unwrap_err(),
            [("documentTitle".into(), "list_b")]
        );
        // Only as the replacement of a List B receipt.
        let b = parse(
            json!({"documentTitle": "Driver's License"}),
            Kind::ReceiptUpdate,
        )
        .unwrap();
        assert_eq!(b.document.list, DocumentList::B);
        // An EAD always has an expiration; a receipt for one has none.
        let ead = json!({"documentTitle": "Employment Authorization Document (Form I-766)"});
        assert_eq!(
            parse(ead.clone(), Kind::Reverification).unwrap_err(),
            [("documentExpiration".into(), "required")]
        );
        let mut receipt = ead;
        receipt["documentReceipt"] = json!(true);
        assert!(parse(receipt, Kind::Reverification).is_ok());
    }

    #[test]
    fn a_receipt_has_no_expiration_and_a_receipt_update_is_no_receipt() {
        let title = "Employment Authorization Document (Form I-766)";
        assert_eq!(
            parse(
                json!({"documentTitle": title, "documentReceipt": true, "documentExpiration": "2027-01-01"}),
                Kind::Reverification
            )
            .unwrap_err(),
            [("documentExpiration".into(), "receipt")]
        );
        assert!(
            parse(
                json!({"documentTitle": title, "documentReceipt": true}),
                Kind::Reverification
            )
            .unwrap()
            .document
            .receipt
        );
        assert_eq!(
            parse(
                json!({"documentTitle": title, "documentReceipt": true}),
                Kind::ReceiptUpdate
            )
            .unwrap_err(),
            [("documentReceipt".into(), "receipt")]
        );
        assert_eq!(
            parse(
                json!({"documentTitle": title, "documentExpiration": "2026-12-14",
                       "employerSignature": "Someone"}),
                Kind::Reverification
            )
            .unwrap_err(),
            [
                ("documentExpiration".into(), "expired"),
                ("employerSignature".into(), "signature_mismatch")
            ]
        );
    }

    #[test]
    fn the_schema_states_the_fields_and_limits_the_body_enforces() {
        use crate::body::schema_is_enforced as each;
        assert_eq!(
            each(|b: SupplementB| b.check(today(), Kind::Reverification).map(drop)),
            12
        );
    }
}
