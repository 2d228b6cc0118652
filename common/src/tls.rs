//! Telling a TLS failure among an error's causes: rustls's error, which
//! sqlx and reqwest hand on inside I/O errors (a certificate that does not
//! verify, a server that does not speak TLS). Start-up ends at once on one
//! (`crate::startup`); a partner callback's recorded cause says `TLS:`.

use std::error::Error;

/// Whether `cause`, or the error inside it (through I/O errors wrapping one
/// another), is a rustls error.
pub fn is_tls_failure(cause: &(dyn Error + 'static)) -> bool {
    let mut cause = cause;
    while let Some(inner) = cause
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
    {
        cause = inner;
    }
    cause.is::<rustls::Error>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rustls_error_is_found_inside_io_errors() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let inner = std::io::Error::new(std::io::ErrorKind::InvalidData, tls.clone());
        let outer = std::io::Error::other(inner);
        assert!(is_tls_failure(&tls));
        assert!(is_tls_failure(&outer));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(!is_tls_failure(&refused));
        assert!(!is_tls_failure(&std::io::Error::other("plain")));
    }
}
