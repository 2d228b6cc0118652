//! JSON request bodies: `Content-Type: application/json` (or `+json`), else
//! 415; a JSON object, else 400 (invalid UTF-8 and lone surrogate escapes
//! such as `"\ud800"` are not valid JSON); no NUL in any name or string,
//! else 422 naming each place ([`crate::text`]). [`JsonBody`] then reads the
//! object as the operation's request type.

use std::collections::BTreeSet;

use axum::{
    body::Bytes,
    extract::{FromRequest, Request},
    http::{header, HeaderMap},
    response::{IntoResponse, Response},
};
use i9_common::domain::{Field, Invalid, Required};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use utoipa::{
    openapi::{RefOr, Schema},
    PartialSchema,
};

use crate::{
    error::{ApiError, ApiResult, FieldError},
    text,
};

/// `application/json` or a `+json` type, with no `charset` but UTF-8's
/// (JSON is UTF-8; docs/api.md, "Writing employees"). Not
/// `application/json-patch+json`: a list of patch operations, which no
/// operation takes.
pub fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mut parts = value.split(';');
    let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let json = media == "application/json"
        || (media.starts_with("application/")
            && media.ends_with("+json")
            && media != "application/json-patch+json");
    json && parts.all(|p| match p.split_once('=') {
        Some((name, charset)) if name.trim().eq_ignore_ascii_case("charset") => {
            let charset = charset.trim().trim_matches('"');
            charset.eq_ignore_ascii_case("utf-8") || charset.eq_ignore_ascii_case("utf8")
        }
        _ => true,
    })
}

/// The body as a JSON object, each member named once.
pub fn json_object(headers: &HeaderMap, body: &[u8]) -> ApiResult<Map<String, Value>> {
    if !is_json(headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let detail = match serde_json::from_slice::<Object>(body) {
        Ok(Object { repeated, .. }) if !repeated.is_empty() => {
            // Which of two values would the caller mean? Neither is taken.
            return Err(ApiError::BadRequest {
                detail: "A member of the body is given more than once.".into(),
                errors: repeated
                    .into_iter()
                    .map(|name| FieldError::new(&name, "repeated", "Give this member once."))
                    .collect(),
            });
        }
        Ok(Object { members: m, .. }) => {
            let mut errors = Vec::new();
            for (name, value) in &m {
                unstorable(name, value, &mut errors);
            }
            return if errors.is_empty() {
                Ok(m)
            } else {
                Err(ApiError::Validation(errors))
            };
        }
        // Not an object: valid JSON of another kind, or not JSON at all.
        Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() => {
            "The body must be a JSON object."
        }
        Err(_) => "The body is not valid JSON.",
    };
    Err(ApiError::BadRequest {
        detail: detail.into(),
        errors: vec![],
    })
}

/// A JSON object read member by member, so that a name given twice is
/// seen (a plain map keeps the last value silently).
struct Object {
    members: Map<String, Value>,
    /// The names given more than once, each once, in order.
    repeated: Vec<String>,
}

impl<'de> serde::Deserialize<'de> for Object {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = Object;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Object, A::Error> {
                let mut members = Map::new();
                let mut repeated = Vec::new();
                while let Some(name) = a.next_key::<String>()? {
                    let value: Value = a.next_value()?;
                    if members.insert(name.clone(), value).is_some() && !repeated.contains(&name) {
                        repeated.push(name);
                    }
                }
                Ok(Object { members, repeated })
            }
        }
        d.deserialize_map(Members)
    }
}

/// A request type read by [`JsonBody`]: its schema (the OpenAPI document's)
/// names the fields it accepts; any other member is refused.
pub trait RequestBody: DeserializeOwned + PartialSchema {
    /// The names of the fields (computed once: `properties(&Self::schema())`).
    fn fields() -> &'static BTreeSet<String>;

    /// The 422 entry of a member that is not one of this body's fields.
    fn unknown(name: &str) -> FieldError {
        FieldError::new(name, "unknown_field", "Not a field of this request.")
    }
}

/// Collects the problems of a body, each under the field's name: what a
/// request type's `check` fills while it reads its [`Field`]s.
#[derive(Default)]
pub struct Problems(Vec<FieldError>);

impl Problems {
    pub fn push(&mut self, field: &str, e: Invalid) {
        self.0.push(FieldError::new(field, e.code, e.message));
    }

    /// Absent, null or a value; a bad value is noted and read as absent.
    pub fn patch<T>(&mut self, name: &str, f: Field<T>) -> Option<Option<T>> {
        f.patch().unwrap_or_else(|e| {
            self.push(name, e);
            None
        })
    }

    pub fn required<T>(&mut self, name: &str, f: Required<T>) -> Option<T> {
        f.get().map_err(|e| self.push(name, e)).ok()
    }

    pub fn optional<T>(&mut self, name: &str, f: Field<T>) -> Option<T> {
        f.optional().map_err(|e| self.push(name, e)).ok().flatten()
    }

    /// A date field (`CalendarDate`, or one of its narrower kinds such
    /// as a date of birth).
    pub fn date<D: Into<chrono::NaiveDate>>(
        &mut self,
        name: &str,
        f: Field<D>,
    ) -> Option<Option<chrono::NaiveDate>> {
        self.patch(name, f).map(|d| d.map(Into::into))
    }

    /// Whether a problem of `field` is noted already (a value sent but bad:
    /// not then also `required`).
    pub fn names(&self, field: &str) -> bool {
        self.0.iter().any(|e| e.field == field)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn into_errors(self) -> Vec<FieldError> {
        self.0
    }

    pub fn finish<T>(self, value: T) -> Result<T, Vec<FieldError>> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self.0)
        }
    }
}

/// The names of the properties a schema (an object, or all of several)
/// declares.
pub fn properties(schema: &RefOr<Schema>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    collect(schema, &mut names);
    names
}

fn collect(schema: &RefOr<Schema>, names: &mut BTreeSet<String>) {
    match schema {
        RefOr::T(Schema::Object(o)) => names.extend(o.properties.keys().cloned()),
        RefOr::T(Schema::AllOf(all)) => all.items.iter().for_each(|s| collect(s, names)),
        _ => {}
    }
}

/// A JSON request body read as `T`, with its raw bytes (the idempotency
/// record keeps their hash). Reading never answers before the handler: a
/// caller without the permission gets its 403 whatever it sent. The
/// handler calls [`JsonBody::check`], which answers 415, 400, or one 422
/// that names every member `T` does not know together with every bad field.
pub struct JsonBody<T> {
    pub raw: Bytes,
    headers: HeaderMap,
    of: std::marker::PhantomData<fn() -> T>,
}

impl<S: Send + Sync, T> FromRequest<S> for JsonBody<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let headers = req.headers().clone();
        let raw = Bytes::from_request(req, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Self {
            raw,
            headers,
            of: std::marker::PhantomData,
        })
    }
}

impl<T: RequestBody> JsonBody<T> {
    /// The body read as `T` and checked by `check`.
    pub fn check<O>(&self, check: impl FnOnce(T) -> Result<O, Vec<FieldError>>) -> ApiResult<O> {
        let object = json_object(&self.headers, &self.raw)?;
        Self::read(object, check)
    }

    /// [`Self::check`] of a body the operation may go without: an empty one
    /// (or white space only), whatever its `Content-Type`, reads as `{}`.
    pub fn check_optional<O>(
        &self,
        check: impl FnOnce(T) -> Result<O, Vec<FieldError>>,
    ) -> ApiResult<O> {
        if self.raw.iter().all(u8::is_ascii_whitespace) {
            return Self::read(Map::new(), check);
        }
        self.check(check)
    }

    fn read<O>(
        object: Map<String, Value>,
        check: impl FnOnce(T) -> Result<O, Vec<FieldError>>,
    ) -> ApiResult<O> {
        let known = T::fields();
        let mut errors: Vec<FieldError> = object
            .keys()
            .filter(|k| !known.contains(*k))
            .map(|k| T::unknown(k))
            .collect();
        let value: T = serde_json::from_value(Value::Object(object)).map_err(|_| {
            ApiError::Validation(vec![FieldError::new(
                "body",
                "invalid_type",
                "The body does not have the fields of this request.",
            )])
        })?;
        match check(value) {
            Ok(o) if errors.is_empty() => Ok(o),
            Ok(_) => Err(ApiError::Validation(errors)),
            Err(more) => {
                errors.extend(more);
                Err(ApiError::Validation(errors))
            }
        }
    }
}

/// For a request type's unit tests: the document is the contract. Every
/// property the schema of `T` lists is a field `T` reads (a bad value is
/// named under that very name), every stated `maxLength` is the one
/// enforced, every value of a stated `enum` is accepted and a near miss is
/// not, and no other member is accepted. The number of properties.
#[cfg(test)]
pub(crate) fn schema_is_enforced<T: RequestBody>(
    check: impl Fn(T) -> Result<(), Vec<FieldError>>,
) -> usize {
    use serde_json::json;

    let errors = |body: Value| -> Vec<(String, &'static str)> {
        let unknown = body
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| !T::fields().contains(*k))
            .map(|k| (k.clone(), T::unknown(k).code))
            .collect::<Vec<_>>();
        let checked = check(serde_json::from_value(body).unwrap()).err();
        unknown
            .into_iter()
            .chain(
                checked
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| (e.field, e.code)),
            )
            .collect()
    };
    let codes_of = |name: &str, v: Value| -> Vec<&'static str> {
        errors(json!({ name: v }))
            .into_iter()
            .filter(|(f, _)| f == name)
            .map(|(_, c)| c)
            .collect()
    };
    let schema = serde_json::to_value(T::schema()).unwrap();
    let mut props = Map::new();
    let mut stack = vec![&schema];
    while let Some(s) = stack.pop() {
        if let Some(p) = s["properties"].as_object() {
            props.extend(p.clone());
        }
        if let Some(all) = s["allOf"].as_array() {
            stack.extend(all);
        }
    }
    assert_eq!(props.keys().cloned().collect::<BTreeSet<_>>(), *T::fields());
    for (name, prop) in &props {
        let errs = errors(json!({ name: {"an": "object"} }));
        assert!(
            errs.iter().any(|(f, c)| f == name && *c != "unknown_field"),
            "{name}: a bad value is named under its own name: {errs:?}"
        );
        let prop = prop.get("oneOf").map_or(prop, |o| &o[0]);
        if let Some(max) = prop["maxLength"].as_u64() {
            let at = |n: u64| {
                let v = if prop["format"] == "email" {
                    // Labels of at most 63 characters.
                    let len = n as usize - 6;
                    let host: String = (0..len)
                        .map(|i| {
                            if i % 50 == 49 && i + 1 < len {
                                '.'
                            } else {
                                'b'
                            }
                        })
                        .collect();
                    format!("a@{host}.com")
                } else if name == "employeeReturnUrl" {
                    format!("https://example.com/{}", "a".repeat(n as usize - 20))
                } else {
                    "7".repeat(n as usize)
                };
                codes_of(name, json!(v))
            };
            assert_eq!(at(max), Vec::<&str>::new(), "{name} at its maxLength {max}");
            assert_eq!(at(max + 1), ["too_long"], "{name} over its maxLength {max}");
            if prop["format"] != "email" && name != "employeeReturnUrl" {
                // Counted as sent: white space around counts too.
                let padded = format!(" {}", "7".repeat(max as usize));
                assert_eq!(
                    codes_of(name, json!(padded)),
                    ["too_long"],
                    "{name}: white space counts towards its maxLength {max}"
                );
            }
        }
        if let Some(choices) = prop["enum"].as_array() {
            for choice in choices {
                assert_eq!(
                    codes_of(name, choice.clone()),
                    Vec::<&str>::new(),
                    "{name} accepts {choice}"
                );
                if let Some(text) = choice.as_str() {
                    for near in [format!("{text} "), text.to_uppercase() + "x"] {
                        assert_eq!(
                            codes_of(name, json!(near)),
                            ["invalid_value"],
                            "{name} refuses {near:?}"
                        );
                    }
                }
            }
        }
    }
    assert_eq!(
        codes_of("colour", json!("blue")),
        ["unknown_field"],
        "a member the schema does not list is refused"
    );
    props.len()
}

/// Every place under `path` (`name`, `name.inner`, `name[0]`) whose name or
/// string holds text Postgres cannot store.
fn unstorable(path: &str, value: &Value, errors: &mut Vec<FieldError>) {
    let nul = |s: &str| text::check(s).is_err();
    let here = |errors: &mut Vec<FieldError>| {
        errors.push(
            text::Unreadable {
                field: path.replace('\0', "\u{FFFD}"),
                reason: text::Reason::Nul,
            }
            .field_error(),
        );
    };
    match value {
        _ if nul(path) => here(errors),
        Value::String(s) if nul(s) => here(errors),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                unstorable(&format!("{path}[{i}]"), item, errors);
            }
        }
        Value::Object(m) => {
            for (name, item) in m {
                unstorable(&format!("{path}.{name}"), item, errors);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(ct: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
        h
    }

    #[test]
    fn only_json_objects_pass() {
        let json = headers("application/json; charset=utf-8");
        assert!(json_object(&json, b"{}").is_ok());
        assert!(json_object(&headers("application/merge-patch+json"), b"{}").is_ok());
        assert!(matches!(
            json_object(&headers("text/plain"), b"{}"),
            Err(ApiError::UnsupportedMediaType)
        ));
        assert!(matches!(
            json_object(&json, b"[1]"),
            Err(ApiError::BadRequest { .. })
        ));
        assert!(matches!(
            json_object(&json, b"{"),
            Err(ApiError::BadRequest { .. })
        ));
        assert!(json_object(&headers("application/json; charset=\"UTF-8\""), b"{}").is_ok());
        for other in [
            "application/json; charset=latin1",
            "application/json;charset=utf-16",
            "application/json-patch+json",
            "text/json",
        ] {
            assert!(
                matches!(
                    json_object(&headers(other), b"{}"),
                    Err(ApiError::UnsupportedMediaType)
                ),
                "{other}"
            );
        }
    }

    #[test]
    fn a_member_given_twice_is_refused_by_name() {
        let json = headers("application/json");
        let Err(ApiError::BadRequest { detail, errors }) = json_object(
            &json,
            br#"{"firstName": "First", "lastName": "L", "firstName": "Second", "firstName": "Third"}"#,
        ) else {
            panic!("a repeated member must be a 400");
        };
        assert!(detail.contains("more than once"), "{detail}");
        let named: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code)).collect();
        assert_eq!(named, [("firstName", "repeated")]);
        // Not an object, or not JSON: as before.
        for (body, expected) in [
            (&b"[1, 2]"[..], "The body must be a JSON object."),
            (b"\"text\"", "The body must be a JSON object."),
            (b"[1, 2", "The body is not valid JSON."),
            (b"{\"a\": 1} x", "The body is not valid JSON."),
        ] {
            let Err(ApiError::BadRequest { detail, .. }) = json_object(&json, body) else {
                panic!("{body:?} must be a 400");
            };
            assert_eq!(detail, expected);
        }
    }

    #[test]
    fn text_postgres_cannot_store_is_refused() {
        let json = headers("application/json");
        for bad in [
            &br#"{"a": "\ud800"}"#[..],
            br#"{"a": "\udc00x"}"#,
            b"{\"a\": \"\xff\"}",
            b"{\"a\": \"\xed\xa0\x80\"}",
        ] {
            assert!(
                matches!(json_object(&json, bad), Err(ApiError::BadRequest { .. })),
                "{bad:?}"
            );
        }
        let e = json_object(
            &json,
            br#"{"firstName": "a\u0000", "ok": "\ud83d\ude00", "x": {"y": ["", "\u0000"]}, "k\u0000": 1}"#,
        );
        let Err(ApiError::Validation(errors)) = e else {
            panic!("422 expected: {e:?}");
        };
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["firstName", "k\u{FFFD}", "x.y[1]"]);
        assert!(errors.iter().all(|e| e.code == "invalid_character"));
    }
}
