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

pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| {
            let m = m.trim().to_ascii_lowercase();
            m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
        })
}

/// The body as a JSON object.
pub fn json_object(headers: &HeaderMap, body: &[u8]) -> ApiResult<Map<String, Value>> {
    if !is_json(headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let detail = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => {
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
        Ok(_) => "The body must be a JSON object.",
        Err(_) => "The body is not valid JSON.",
    };
    Err(ApiError::BadRequest {
        detail: detail.into(),
        errors: vec![],
    })
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
