//! JSON request bodies: `Content-Type: application/json` (or `+json`), else
//! 415; a JSON object, else 400. The writes parse their fields from there.

use axum::http::{header, HeaderMap};
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};

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
        Ok(Value::Object(m)) => return Ok(m),
        Ok(_) => "The body must be a JSON object.",
        Err(_) => "The body is not valid JSON.",
    };
    Err(ApiError::BadRequest {
        detail: detail.into(),
        errors: vec![],
    })
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
}
