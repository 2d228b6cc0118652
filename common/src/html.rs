//! Text into HTML (the employee pages and the emails).

/// Escape text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    #[test]
    fn markup_is_neutralised() {
        assert_eq!(
            super::escape(r#"<a href="x">O'Neil & co</a>"#),
            "&lt;a href=&quot;x&quot;&gt;O&#39;Neil &amp; co&lt;/a&gt;"
        );
    }
}
