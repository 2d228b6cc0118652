//! The I-9 lifecycle after Section 1 (docs/api.md, "The I-9 lifecycle"):
//! `POST /v1/i9s/{id}/section2`, `/complete`, `/park` (permission 4) and
//! `/approve` (permission 5). Each answers 200 with the updated I-9; a step
//! the current status does not allow is a 409. The steps themselves, and the
//! state machine they follow, are in `i9_common::models::i9`: a handler here
//! extracts, authorizes, calls and answers. The Section 2 and park bodies
//! are request types read through [`JsonBody`], as the employee bodies are
//! (`routes/employees/input.rs`): fields of the domain types with their
//! limits, document titles as enums of each list's titles, and one 422 that
//! names every bad field and every broken rule across fields.

use std::{collections::BTreeSet, sync::OnceLock};

use axum::{extract::State, Json};
use chrono::NaiveDate;
use i9_common::{
    domain::{
        fields::{enum_schema, CalendarDate, Text, WHITESPACE},
        remote_examination::Refusal,
        signature::signs_as,
        Field, FromJson, Invalid, Permission, Required, Scope,
    },
    models::{
        i9::{self as lifecycle, Document, Documents, Employer, Section2 as Section2Input},
        supplement_b::expiration_required,
    },
};
use serde::Deserialize;
use serde_json::Value;
use utoipa::{
    openapi::{schema::AnyOfBuilder, ObjectBuilder, RefOr, Schema, Type},
    PartialSchema, ToSchema,
};

use super::{i9s, Id};
use crate::{
    auth::Caller,
    body::{properties, JsonBody, Problems, RequestBody},
    error::{ApiResult, FieldError, Problem},
    state::AppState,
};

/// The titles of one list of the Form I-9 "Lists of Acceptable Documents",
/// as an enum: each variant's title is accepted in any letter case, with
/// white space around it, and stored as written here; the schema lists them
/// as `enum` and says the rest (docs/api.md, "Section 2 documents").
macro_rules! document_list {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $title:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($variant,)+
        }

        impl $name {
            /// The accepted titles, in the form's order.
            pub const TITLES: &'static [&'static str] = &[$($title,)+];
            const ALL: &'static [$name] = &[$($name::$variant,)+];

            pub fn title(self) -> &'static str {
                match self {
                    $($name::$variant => $title,)+
                }
            }
        }

        impl FromJson for $name {
            fn from_json(value: &Value) -> Result<Self, Invalid> {
                document_title(value, Self::ALL, Self::title)
            }
        }

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                title_schema(Self::TITLES)
            }
        }

        impl ToSchema for $name {}
    };
}

document_list!(
    /// A List A document: identity and employment authorization.
    ListA {
        UsPassport => "U.S. Passport",
        UsPassportCard => "U.S. Passport Card",
        PermanentResidentCard => "Permanent Resident Card (Form I-551)",
        ForeignPassportWithI551Stamp => "Foreign Passport with I-551 Stamp",
        EmploymentAuthorizationDocument => "Employment Authorization Document (Form I-766)",
        ForeignPassportWithI94 => "Foreign Passport with Form I-94",
        FsmOrRmiPassportWithI94 => "Passport from FSM or RMI with Form I-94",
    }
);

document_list!(
    /// A List B document: identity.
    ListB {
        DriversLicense => "Driver's License",
        StateIdCard => "State ID Card",
        GovernmentIdCard => "Federal or Local Government ID Card",
        SchoolIdCard => "School ID Card",
        VoterRegistrationCard => "Voter Registration Card",
        MilitaryCard => "U.S. Military Card",
        MilitaryDependentsIdCard => "Military Dependent's ID Card",
        MerchantMarinerCard => "U.S. Coast Guard Merchant Mariner Card",
        NativeAmericanTribalDocument => "Native American Tribal Document",
        CanadianDriversLicense => "Canadian Driver's License",
    }
);

document_list!(
    /// A List C document: employment authorization.
    ListC {
        SocialSecurityCard => "Social Security Card",
        ReportOfBirthAbroad => "Certification of Report of Birth (Form DS-1350, FS-545, FS-240)",
        BirthCertificate => "Birth Certificate",
        NativeAmericanTribalDocument => "Native American Tribal Document",
        CitizenIdCard => "U.S. Citizen ID Card (Form I-197)",
        ResidentCitizenIdCard => "Identification Card for Use of Resident Citizen (Form I-179)",
        DhsEmploymentAuthorization => "Employment Authorization Document issued by DHS",
    }
);

/// One of `all`, by its title in any (ASCII) letter case, white space
/// around it trimmed; else the list in the message.
fn document_title<T: Copy>(
    value: &Value,
    all: &[T],
    title: fn(T) -> &'static str,
) -> Result<T, Invalid> {
    let s = value
        .as_str()
        .ok_or_else(|| Invalid::new("invalid_type", "Must be a string."))?
        .trim();
    all.iter()
        .copied()
        .find(|t| title(*t).eq_ignore_ascii_case(s))
        .ok_or_else(|| {
            let titles: Vec<&str> = all.iter().map(|t| title(*t)).collect();
            Invalid::new(
                "invalid_value",
                format!(
                    "Not a document of this list. Accepted (in any letter case): {}.",
                    titles.join("; ")
                ),
            )
        })
}

/// The schema of a list's titles: the titles as `enum`, or (what the API
/// also accepts) one of them in another letter case, with white space
/// around it: a pattern spelling each letter both ways, as JSON Schema's
/// patterns have no flag for case.
pub(crate) fn title_schema(titles: &[&str]) -> RefOr<Schema> {
    let any_case: Vec<String> = titles
        .iter()
        .map(|title| {
            title
                .chars()
                .map(|c| match c {
                    c if c.is_ascii_alphabetic() => {
                        format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())
                    }
                    c if r"\.+*?()|[]{}^$".contains(c) => format!("\\{c}"),
                    c => c.to_string(),
                })
                .collect()
        })
        .collect();
    AnyOfBuilder::new()
        .description(Some(
            "One of the titles of `enum`, in any letter case, with white space around it \
             allowed; stored and answered as `enum` writes it.",
        ))
        .item(enum_schema(titles))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(format!(
                    "^{WHITESPACE}*(?:{}){WHITESPACE}*$",
                    any_case.join("|")
                ))),
        )
        .into()
}

// The limits of Section 2's text fields.
pub type DocumentIssuer = Text<100>;
pub type DocumentNumber = Text<50>;
pub type EmployerName = Text<40>;
pub type EmployerTitle = Text<80>;
pub type EmployerBusiness = Text<100>;
pub type EmployerAddress = Text<80>;
pub type EmployerCity = Text<50>;
pub type EmployerState = Text<20>;
pub type EmployerZip = Text<10>;
pub type Signature = Text<100>;
pub type ParkNotes = Text<500>;

/// The body of `POST /v1/i9s/{id}/section2`: the documents (List A, or List
/// B and List C), the employer representative, and the representative's
/// signature (their name, typed). A blank string means null. The rules
/// across fields (List A, or List B and List C; each document whole; no
/// expiration in the past; the signature the representative's name) are
/// each a 422 naming its fields (docs/api.md, "The I-9 lifecycle").
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({
    "listBDocTitle": "Driver's License", "listBDocIssuer": "Oregon DMV", "listBDocNumber": "D1234567",
    "listBDocExpiration": "2030-04-01", "listCDocTitle": "Social Security Card", "listCDocIssuer": "SSA",
    "listCDocNumber": "on file", "employerFirstName": "Wes", "employerLastName": "Turner",
    "employerTitle": "HR Manager", "employerBusiness": "Acme Staffing US LLC", "employerSignature": "Wes Turner"
}))]
pub struct Section2 {
    /// A List A document: alone, not with List B or C. With its issuer and number.
    #[serde(default)]
    #[schema(inline)]
    pub list_a1_doc_title: Field<ListA>,
    #[serde(default)]
    #[schema(inline)]
    pub list_a1_doc_issuer: Field<DocumentIssuer>,
    #[serde(default)]
    #[schema(inline)]
    pub list_a1_doc_number: Field<DocumentNumber>,
    /// Not in the past.
    #[serde(default)]
    #[schema(inline)]
    pub list_a1_doc_expiration: Field<CalendarDate>,
    /// A second List A document of a combination (such as a foreign passport with Form I-94); with `listA1Doc*`.
    #[serde(default)]
    #[schema(inline)]
    pub list_a2_doc_title: Field<ListA>,
    #[serde(default)]
    #[schema(inline)]
    pub list_a2_doc_issuer: Field<DocumentIssuer>,
    #[serde(default)]
    #[schema(inline)]
    pub list_a2_doc_number: Field<DocumentNumber>,
    /// Not in the past.
    #[serde(default)]
    #[schema(inline)]
    pub list_a2_doc_expiration: Field<CalendarDate>,
    /// A third List A document of a combination; with `listA1Doc*`.
    #[serde(default)]
    #[schema(inline)]
    pub list_a3_doc_title: Field<ListA>,
    #[serde(default)]
    #[schema(inline)]
    pub list_a3_doc_issuer: Field<DocumentIssuer>,
    #[serde(default)]
    #[schema(inline)]
    pub list_a3_doc_number: Field<DocumentNumber>,
    /// Not in the past.
    #[serde(default)]
    #[schema(inline)]
    pub list_a3_doc_expiration: Field<CalendarDate>,
    /// A List B document: with a List C document, not with List A.
    #[serde(default)]
    #[schema(inline)]
    pub list_b_doc_title: Field<ListB>,
    #[serde(default)]
    #[schema(inline)]
    pub list_b_doc_issuer: Field<DocumentIssuer>,
    #[serde(default)]
    #[schema(inline)]
    pub list_b_doc_number: Field<DocumentNumber>,
    /// Not in the past.
    #[serde(default)]
    #[schema(inline)]
    pub list_b_doc_expiration: Field<CalendarDate>,
    /// A List C document: with a List B document, not with List A.
    #[serde(default)]
    #[schema(inline)]
    pub list_c_doc_title: Field<ListC>,
    #[serde(default)]
    #[schema(inline)]
    pub list_c_doc_issuer: Field<DocumentIssuer>,
    #[serde(default)]
    #[schema(inline)]
    pub list_c_doc_number: Field<DocumentNumber>,
    /// Not in the past.
    #[serde(default)]
    #[schema(inline)]
    pub list_c_doc_expiration: Field<CalendarDate>,
    // Receipts (docs/reverification.md, "Receipts").
    /// `true`: the List A document is a receipt for the replacement of a lost, stolen or
    /// damaged one, without an expiration; the real document is due 90 days after the date of
    /// hire (`receiptDueDate`).
    #[serde(default)]
    #[schema(inline)]
    pub list_a1_doc_receipt: Field<bool>,
    /// `true`: the List B document is such a receipt.
    #[serde(default)]
    #[schema(inline)]
    pub list_b_doc_receipt: Field<bool>,
    /// `true`: the List C document is such a receipt.
    #[serde(default)]
    #[schema(inline)]
    pub list_c_doc_receipt: Field<bool>,
    /// Required.
    #[schema(inline)]
    pub employer_first_name: Required<EmployerName>,
    /// Required.
    #[schema(inline)]
    pub employer_last_name: Required<EmployerName>,
    /// Required.
    #[schema(inline)]
    pub employer_title: Required<EmployerTitle>,
    /// Required.
    #[schema(inline)]
    pub employer_business: Required<EmployerBusiness>,
    /// Absent or null, the I-9 keeps what it holds.
    #[serde(default)]
    #[schema(inline)]
    pub employer_address: Field<EmployerAddress>,
    #[serde(default)]
    #[schema(inline)]
    pub employer_city: Field<EmployerCity>,
    #[serde(default)]
    #[schema(inline)]
    pub employer_state: Field<EmployerState>,
    #[serde(default)]
    #[schema(inline)]
    pub employer_zip: Field<EmployerZip>,
    /// The representative's electronic signature: their first and last name
    /// as given in `employerFirstName` and `employerLastName` (case and
    /// spacing aside). Required.
    #[schema(inline)]
    pub employer_signature: Required<Signature>,
    /// The form's checkbox "Check here if you used an alternative procedure
    /// authorized by DHS to examine documents.": `true` when the documents
    /// were examined remotely under that procedure. Allowed only when the
    /// employee's legal entity participates in E-Verify in good standing
    /// (docs/remote-examination.md); otherwise a 422 saying why. Absent or
    /// null is `false`.
    #[serde(default)]
    #[schema(inline)]
    pub alternative_procedure: Field<bool>,
}

/// The body of `POST /v1/i9s/{id}/park`, which may be left out: the park's
/// reason.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"i9Notes": "Waiting for the employee's documents"}))]
pub struct Park {
    /// Why the I-9 is parked, kept in `i9Notes`.
    #[serde(default, rename = "i9Notes")]
    #[schema(inline)]
    pub i9_notes: Field<ParkNotes>,
}

impl RequestBody for Section2 {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        FieldError::new(name, "unknown_field", "Not a field of Section 2.")
    }
}

impl RequestBody for Park {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        FieldError::new(name, "unknown_field", "A park takes only i9Notes.")
    }
}

/// The four fields of one document of the body (`listA1Doc*`, …).
struct DocumentFields<T> {
    prefix: &'static str,
    title: Field<T>,
    issuer: Field<DocumentIssuer>,
    number: Field<DocumentNumber>,
    expiration: Field<CalendarDate>,
}

/// Given, or null (a blank string is null).
fn given<T>(f: &Field<T>) -> bool {
    !matches!(f, Field::Absent | Field::Null)
}

/// The value of a field a document needs: one given a bad value is named
/// for that value; one not given (absent, null or blank), as `required`
/// with `message`.
fn needed<V>(
    p: &mut Problems,
    field: &str,
    message: &str,
    read: Result<Option<V>, Invalid>,
) -> Option<V> {
    match read {
        Ok(Some(v)) => Some(v),
        Ok(None) => {
            p.push(field, Invalid::new("required", message));
            None
        }
        Err(e) => {
            p.push(field, e);
            None
        }
    }
}

impl<T: Copy> DocumentFields<T> {
    /// Whether any of the four is given.
    fn present(&self) -> bool {
        given(&self.title) || given(&self.issuer) || given(&self.number) || given(&self.expiration)
    }

    /// `None` when no field of the document is given; else the document
    /// when it is whole and valid, each problem noted.
    fn read(
        self,
        p: &mut Problems,
        today: NaiveDate,
        title_of: fn(T) -> &'static str,
    ) -> Option<Option<Document>> {
        if !self.present() {
            return None;
        }
        let name = |s: &str| format!("{}{s}", self.prefix);
        let title = needed(
            p,
            &name("Title"),
            "Name the document.",
            self.title.optional().map(|t| t.map(title_of)),
        );
        let issuer = needed(
            p,
            &name("Issuer"),
            "Give the issuing authority.",
            self.issuer.optional(),
        );
        let number = needed(
            p,
            &name("Number"),
            "Give the document number.",
            self.number.optional(),
        );
        let expiration = match self.expiration.optional() {
            Ok(Some(CalendarDate(d))) if d < today => {
                p.push(
                    &name("Expiration"),
                    Invalid::new("expired", "The document has expired."),
                );
                None
            }
            Ok(d) => d.map(|d| d.0),
            Err(e) => {
                p.push(&name("Expiration"), e);
                None
            }
        };
        Some(match (title, issuer, number) {
            (Some(title), Some(issuer), Some(number)) => Some(Document {
                title: title.to_owned(),
                issuer: issuer.into_string(),
                number: number.into_string(),
                expiration,
                receipt: false,
            }),
            _ => None,
        })
    }
}

impl Section2 {
    /// Every field, and the rules across them, checked (`today`: the day of
    /// signing, which no expiration may precede; `refusal`: why the
    /// employer may not use the alternative procedure, if it may not).
    /// `Err` names every problem.
    pub fn check(
        self,
        today: NaiveDate,
        refusal: Option<&Refusal>,
    ) -> Result<Section2Input, Vec<FieldError>> {
        let mut p = Problems::default();
        let receipts = [
            ("listA1Doc", self.list_a1_doc_receipt),
            ("listBDoc", self.list_b_doc_receipt),
            ("listCDoc", self.list_c_doc_receipt),
        ]
        .map(|(doc, f)| (doc, p.optional(&format!("{doc}Receipt"), f) == Some(true)));
        let alternative_procedure = match self.alternative_procedure.optional() {
            Ok(Some(true)) => match refusal {
                Some(r) => {
                    p.push("alternativeProcedure", r.invalid());
                    false
                }
                None => true,
            },
            Ok(_) => false,
            Err(e) => {
                p.push("alternativeProcedure", e);
                false
            }
        };
        let mut a1 = DocumentFields {
            prefix: "listA1Doc",
            title: self.list_a1_doc_title,
            issuer: self.list_a1_doc_issuer,
            number: self.list_a1_doc_number,
            expiration: self.list_a1_doc_expiration,
        }
        .read(&mut p, today, ListA::title);
        let a2 = DocumentFields {
            prefix: "listA2Doc",
            title: self.list_a2_doc_title,
            issuer: self.list_a2_doc_issuer,
            number: self.list_a2_doc_number,
            expiration: self.list_a2_doc_expiration,
        }
        .read(&mut p, today, ListA::title);
        let a3 = DocumentFields {
            prefix: "listA3Doc",
            title: self.list_a3_doc_title,
            issuer: self.list_a3_doc_issuer,
            number: self.list_a3_doc_number,
            expiration: self.list_a3_doc_expiration,
        }
        .read(&mut p, today, ListA::title);
        let mut b = DocumentFields {
            prefix: "listBDoc",
            title: self.list_b_doc_title,
            issuer: self.list_b_doc_issuer,
            number: self.list_b_doc_number,
            expiration: self.list_b_doc_expiration,
        }
        .read(&mut p, today, ListB::title);
        let mut c = DocumentFields {
            prefix: "listCDoc",
            title: self.list_c_doc_title,
            issuer: self.list_c_doc_issuer,
            number: self.list_c_doc_number,
            expiration: self.list_c_doc_expiration,
        }
        .read(&mut p, today, ListC::title);
        let (has_a1, has_a2, has_a3, has_b, has_c) = (
            a1.is_some(),
            a2.is_some(),
            a3.is_some(),
            b.is_some(),
            c.is_some(),
        );
        let rule = |p: &mut Problems, field: &str, code: &'static str, message: &str| {
            p.push(field, Invalid::new(code, message));
        };
        if (has_a2 || has_a3) && !has_a1 {
            rule(
                &mut p,
                "listA1DocTitle",
                "required",
                "Further List A documents go with a first one.",
            );
        }
        if has_a1 && (has_b || has_c) {
            for field in [
                "listA1DocTitle",
                if has_b {
                    "listBDocTitle"
                } else {
                    "listCDocTitle"
                },
            ] {
                rule(
                    &mut p,
                    field,
                    "combination",
                    "Record List A, or List B and List C, not both.",
                );
            }
        } else if !has_a1 && has_b && !has_c {
            rule(
                &mut p,
                "listCDocTitle",
                "required",
                "A List B document goes with a List C document.",
            );
        } else if !has_a1 && has_c && !has_b {
            rule(
                &mut p,
                "listBDocTitle",
                "required",
                "A List C document goes with a List B document.",
            );
        } else if !has_a1 && !has_b && !has_c && !has_a2 && !has_a3 {
            rule(
                &mut p,
                "listA1DocTitle",
                "required",
                "Record a List A document, or List B and List C documents.",
            );
        }
        // A receipt is one of the documents given, without an expiration:
        // its validity is the 90 days (docs/reverification.md, "Receipts").
        let expires = |d: &Option<Option<Document>>| {
            d.as_ref()
                .and_then(Option::as_ref)
                .is_some_and(|d| d.expiration.is_some())
        };
        for ((doc, receipt), (given, expiration)) in receipts.iter().zip([
            (has_a1, expires(&a1)),
            (has_b, expires(&b)),
            (has_c, expires(&c)),
        ]) {
            if *receipt && !given {
                rule(
                    &mut p,
                    &format!("{doc}Receipt"),
                    "required",
                    "A receipt is one of the documents recorded: give its title, issuer and number.",
                );
            } else if *receipt && expiration {
                rule(
                    &mut p,
                    &format!("{doc}Expiration"),
                    "receipt",
                    "A receipt is valid 90 days from the date of hire; give no expiration.",
                );
            }
        }
        // Each document remembers whether it is the receipt.
        for (doc, (_, is_receipt)) in [&mut a1, &mut b, &mut c].into_iter().zip(receipts) {
            if let Some(Some(d)) = doc {
                d.receipt = is_receipt;
            }
        }
        let receipt = receipts.iter().any(|(_, r)| *r);
        // An EAD or a temporary I-551 without its expiration would never be
        // reverified (docs/reverification.md, "Reverification"); one given
        // but refused (expired) is not also missing.
        if let Some(first) = a1.as_ref().and_then(Option::as_ref) {
            if first.expiration.is_none() && !p.names("listA1DocExpiration") {
                if let Some(message) = expiration_required(&first.title, first.receipt) {
                    rule(&mut p, "listA1DocExpiration", "required", &message);
                }
            }
        }
        let first_name = p.required("employerFirstName", self.employer_first_name);
        let last_name = p.required("employerLastName", self.employer_last_name);
        let title = p.required("employerTitle", self.employer_title);
        let business = p.required("employerBusiness", self.employer_business);
        let address = p.optional("employerAddress", self.employer_address);
        let city = p.optional("employerCity", self.employer_city);
        let state = p.optional("employerState", self.employer_state);
        let zip = p.optional("employerZip", self.employer_zip);
        match self.employer_signature.get() {
            Err(e) if e.code == "required" => rule(
                &mut p,
                "employerSignature",
                "required",
                "Sign by typing your first and last name.",
            ),
            Err(e) => p.push("employerSignature", e),
            Ok(signature) => {
                if let (Some(first), Some(last)) = (&first_name, &last_name) {
                    let expected = format!("{} {}", first.as_str(), last.as_str());
                    if !signs_as(signature.as_str(), &expected) {
                        rule(
                            &mut p,
                            "employerSignature",
                            "signature_mismatch",
                            "Type your first and last name exactly as given in employerFirstName and employerLastName.",
                        );
                    }
                }
            }
        }
        // With no problem noted, each document given is whole, and they form
        // List A, or List B and List C (the rules above).
        let documents = match (a1.flatten(), b.flatten(), c.flatten()) {
            (Some(first), None, None) => Documents::ListA {
                first,
                second: a2.flatten(),
                third: a3.flatten(),
            },
            (None, Some(b), Some(c)) => Documents::ListBAndC { b, c },
            _ if !p.is_empty() => return Err(p.into_errors()),
            _ => {
                return Err(vec![FieldError::new(
                    "listA1DocTitle",
                    "required",
                    "Record a List A document, or List B and List C documents.",
                )])
            }
        };
        let (Some(first_name), Some(last_name), Some(title), Some(business)) =
            (first_name, last_name, title, business)
        else {
            return Err(p.into_errors());
        };
        p.finish(Section2Input {
            documents,
            employer: Employer {
                first_name: first_name.into_string(),
                last_name: last_name.into_string(),
                title: title.into_string(),
                business: business.into_string(),
                address: address.map(Text::into_string),
                city: city.map(Text::into_string),
                state: state.map(Text::into_string),
                zip: zip.map(Text::into_string),
            },
            signed_on: today,
            receipt,
            alternative_procedure,
        })
    }
}

impl Park {
    /// The reason, if any.
    pub fn check(self) -> Result<Option<String>, Vec<FieldError>> {
        let mut p = Problems::default();
        let notes = p.optional("i9Notes", self.i9_notes);
        p.finish(notes.map(Text::into_string))
    }
}

#[utoipa::path(
    post, path = "/v1/i9s/{id}/section2", operation_id = "signSection2", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    request_body(content = Section2, content_type = "application/json"),
    responses(
        (status = 200, description = "Section 2 recorded; the I-9 is Signed Sec 2", body = i9s::I9Record),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The I-9 is not Signed Sec 1", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named; `alternativeProcedure` when the employer may not use it (not enrolled in E-Verify, or not in good standing)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn section2(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    body: JsonBody<Section2>,
) -> ApiResult<Json<i9s::I9Record>> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let id = id.get()?;
    i9s::check_visible(&state, &caller, id).await?;
    let today = state.config.today();
    let allowed = lifecycle::alternative_procedure_allowed(&state.pool, id, today).await?;
    let section2 = body.check(|b: Section2| b.check(today, allowed.err().as_ref()))?;
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
    body: JsonBody<Park>,
) -> ApiResult<Json<i9s::I9Record>> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let id = id.get()?;
    let notes = body.check_optional(Park::check)?;
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
    use serde_json::{json, Map};

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

    fn parse_section2(
        body: &Map<String, Value>,
        today: NaiveDate,
    ) -> Result<Section2Input, Vec<FieldError>> {
        serde_json::from_value::<Section2>(Value::Object(body.clone()))
            .unwrap()
            .check(today, None)
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
        let combination = with(
            json!({"listA1DocTitle": "Foreign Passport with Form I-94", "listA1DocIssuer": "Mexico",
                   "listA1DocNumber": "G1", "listA2DocTitle": "Foreign Passport with Form I-94",
                   "listA2DocIssuer": "CBP", "listA2DocNumber": "I94-1", "listA2DocExpiration": "11/22/2026"}),
        );
        let parsed = parse_section2(&combination, today()).unwrap();
        assert!(matches!(
            parsed.documents,
            Documents::ListA { second: Some(ref d), third: None, .. }
                if d.number == "I94-1" && d.expiration == Some(today())
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
        let second_alone = with(
            json!({"listA2DocTitle": "U.S. Passport", "listA2DocIssuer": "DoS", "listA2DocNumber": "1"}),
        );
        assert_eq!(
            codes(parse_section2(&second_alone, today())),
            [("listA1DocTitle".into(), "required")]
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
        // An EAD's expiration, given but past, is `expired` alone, not also
        // `required`; not given, `required`.
        let ead = |expiration: Option<&str>| {
            let mut b = json!({"listA1DocTitle": "Employment Authorization Document (Form I-766)",
                               "listA1DocIssuer": "USCIS", "listA1DocNumber": "1"});
            if let Some(e) = expiration {
                b["listA1DocExpiration"] = json!(e);
            }
            with(b)
        };
        assert_eq!(
            codes(parse_section2(&ead(Some("11/21/2026")), today())),
            [("listA1DocExpiration".into(), "expired")]
        );
        assert_eq!(
            codes(parse_section2(&ead(None), today())),
            [("listA1DocExpiration".into(), "required")]
        );
    }

    /// Each bad field is named once, with its own problem; a document's
    /// field not given is `required`; blank is not given.
    #[test]
    fn every_bad_field_is_named_once() {
        let body = with(json!({
            "listBDocTitle": "Drivers License", "listBDocIssuer": 7, "listBDocNumber": "  ",
            "listBDocExpiration": "2030-02-30",
            "listCDocTitle": "Social Security Card", "listCDocIssuer": "SSA", "listCDocNumber": "1",
            "employerFirstName": "W".repeat(41), "employerZip": "12345678901", "employerSignature": ""
        }));
        assert_eq!(
            codes(parse_section2(&body, today())),
            [
                ("listBDocTitle".into(), "invalid_value"),
                ("listBDocIssuer".into(), "invalid_type"),
                ("listBDocNumber".into(), "required"),
                ("listBDocExpiration".into(), "invalid_date"),
                ("employerFirstName".into(), "too_long"),
                ("employerZip".into(), "too_long"),
                ("employerSignature".into(), "required"),
            ]
        );
    }

    #[test]
    fn a_title_not_on_its_list_names_the_list() {
        let e = ListC::from_json(&json!("U.S. Passport")).unwrap_err();
        assert_eq!(e.code, "invalid_value");
        assert!(e
            .message
            .contains("Social Security Card; Certification of Report of Birth"));
        assert_eq!(
            ListB::from_json(&json!("Driver's License")),
            Ok(ListB::DriversLicense)
        );
        assert_eq!(
            (
                ListA::TITLES.len(),
                ListB::TITLES.len(),
                ListC::TITLES.len()
            ),
            (7, 10, 7)
        );
    }

    /// The titles docs/api.md ("Section 2 documents") lists for each list,
    /// in its order: the rows `| A | `title` |` of its table.
    fn documented_titles() -> [Vec<String>; 3] {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/api.md");
        let guide = std::fs::read_to_string(path).unwrap();
        let table = guide
            .split("\n| List | Accepted title |\n|---|---|\n")
            .nth(1)
            .expect("docs/api.md has the table of Section 2's document titles");
        let mut lists: [Vec<String>; 3] = Default::default();
        for row in table.lines().take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
            let [list, title] = cells[..] else {
                panic!("a row of two cells: {row}");
            };
            let title = title
                .strip_prefix('`')
                .and_then(|t| t.strip_suffix('`'))
                .unwrap_or_else(|| panic!("a title in backticks: {row}"));
            let at = ["A", "B", "C"]
                .iter()
                .position(|l| *l == list)
                .unwrap_or_else(|| panic!("list A, B or C: {row}"));
            lists[at].push(title.to_owned());
        }
        lists
    }

    /// The guide's table is the enums' titles, each accepted, none missing
    /// and none extra, in the same order; and the OpenAPI document states
    /// the same as each title field's `enum`.
    #[test]
    fn the_guide_lists_exactly_the_accepted_document_titles() {
        let documented = documented_titles();
        let accepted: [Vec<String>; 3] = [ListA::TITLES, ListB::TITLES, ListC::TITLES]
            .map(|titles| titles.iter().map(|t| t.to_string()).collect());
        let parses: [fn(&Value) -> bool; 3] = [
            |v| ListA::from_json(v).is_ok(),
            |v| ListB::from_json(v).is_ok(),
            |v| ListC::from_json(v).is_ok(),
        ];
        let document = serde_json::to_value(crate::routes::openapi::document()).unwrap();
        let schema = &document["components"]["schemas"]["Section2"];
        // The value's branch of the field's `oneOf` (maybe wrapped in one
        // more, with the field's description), and in it the `anyOf` branch
        // with an `enum` (the other takes the titles in any letter case).
        fn enum_of(schema: &Value) -> Option<&Value> {
            schema.get("enum").or_else(|| {
                ["oneOf", "anyOf"]
                    .iter()
                    .find_map(|k| schema[k].as_array()?.iter().find_map(enum_of))
            })
        }
        let fields: [&[&str]; 3] = [
            &["listA1DocTitle", "listA2DocTitle", "listA3DocTitle"],
            &["listBDocTitle"],
            &["listCDocTitle"],
        ];
        for (i, list) in ["A", "B", "C"].iter().enumerate() {
            let (docs, code) = (&documented[i], &accepted[i]);
            let missing: Vec<&String> = code.iter().filter(|t| !docs.contains(t)).collect();
            let extra: Vec<&String> = docs.iter().filter(|t| !code.contains(t)).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "List {list}: accepted but not in docs/api.md: {missing:?}; \
                 in docs/api.md but not accepted: {extra:?}"
            );
            assert_eq!(docs, code, "List {list}: the guide's order is the form's");
            for title in docs {
                assert!(parses[i](&json!(title)), "List {list} accepts {title:?}");
            }
            for field in fields[i] {
                let stated = enum_of(&schema["properties"][field]);
                assert_eq!(stated, Some(&json!(code)), "{field}'s enum");
            }
        }
    }

    /// A receipt is one of the documents recorded, without an expiration.
    #[test]
    fn a_receipt_is_a_document_recorded_without_expiration() {
        let bc = with(
            json!({"listBDocTitle": "Driver's License", "listBDocIssuer": "OR", "listBDocNumber": "1",
                   "listCDocTitle": "Social Security Card", "listCDocIssuer": "SSA", "listCDocNumber": "2",
                   "listCDocReceipt": true}),
        );
        assert!(parse_section2(&bc, today()).unwrap().receipt);
        let mut no_receipt = bc.clone();
        no_receipt.remove("listCDocReceipt");
        assert!(!parse_section2(&no_receipt, today()).unwrap().receipt);
        let mut dated = bc.clone();
        dated.insert("listCDocExpiration".into(), json!("2030-01-01"));
        assert_eq!(
            codes(parse_section2(&dated, today())),
            [("listCDocExpiration".into(), "receipt")]
        );
        let mut elsewhere = bc;
        elsewhere.insert("listA1DocReceipt".into(), json!(true));
        assert_eq!(
            codes(parse_section2(&elsewhere, today())),
            [("listA1DocReceipt".into(), "required")]
        );
    }

    /// The checkbox is recorded where the employer may use the procedure,
    /// and refused, saying why, where it may not; unchecked, nothing is asked.
    #[test]
    fn the_alternative_procedure_needs_an_everify_employer_in_good_standing() {
        let body = with(
            json!({"listA1DocTitle": "U.S. Passport", "listA1DocIssuer": "U.S. Department of State",
                               "listA1DocNumber": "X1234567", "alternativeProcedure": true}),
        );
        let read = |body: &Map<String, Value>, refusal: Option<&Refusal>| {
            serde_json::from_value::<Section2>(Value::Object(body.clone()))
                .unwrap()
                .check(today(), refusal)
        };
        assert!(read(&body, None).unwrap().alternative_procedure);
        let refusal = Refusal::NotInGoodStanding {
            entity: "Acme".into(),
            status: "Not Ready".into(),
        };
        let e = read(&body, Some(&refusal)).unwrap_err();
        assert_eq!(e.len(), 1);
        assert_eq!(
            (e[0].field.as_str(), e[0].code),
            ("alternativeProcedure", "everify_not_in_good_standing")
        );
        assert!(e[0].message.contains("Not Ready"), "{}", e[0].message);
        for unchecked in [json!(false), Value::Null] {
            let mut b = body.clone();
            b.insert("alternativeProcedure".into(), unchecked);
            assert!(!read(&b, Some(&refusal)).unwrap().alternative_procedure);
        }
        let mut b = body.clone();
        b.insert("alternativeProcedure".into(), json!("yes"));
        assert_eq!(
            codes(read(&b, None)),
            [("alternativeProcedure".into(), "invalid_type")]
        );
    }

    #[test]
    fn a_park_takes_an_optional_reason() {
        let park = |v: Value| serde_json::from_value::<Park>(v).unwrap().check();
        assert_eq!(park(json!({})), Ok(None));
        assert_eq!(park(json!({"i9Notes": "  "})), Ok(None));
        assert_eq!(park(json!({"i9Notes": " why "})), Ok(Some("why".into())));
        let e = park(json!({"i9Notes": "x".repeat(501)})).unwrap_err();
        assert_eq!((e[0].field.as_str(), e[0].code), ("i9Notes", "too_long"));
    }

    /// The document states what these bodies enforce (as the employee
    /// bodies', `crate::body::schema_is_enforced`).
    #[test]
    fn the_schema_states_the_fields_and_limits_each_body_enforces() {
        use crate::body::schema_is_enforced as each;
        assert_eq!(each(|b: Section2| b.check(today(), None).map(drop)), 33);
        assert_eq!(each(|b: Park| b.check().map(drop)), 1);
    }
}
