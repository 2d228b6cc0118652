//! JSON request bodies: `Content-Type: application/json` (or `+json`), else
//! 415; a JSON object, else 400 (invalid UTF-8 and lone surrogate escapes
//! such as `"\ud800"` are not valid JSON); no NUL in any name or string,
//! else 422 naming each place ([`crate::text`]). The writes parse their
//! fields from there.

use axum::http::{header, HeaderMap};
use serde_json::{Map, Value};

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
