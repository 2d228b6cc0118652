//! Cryptography for personal data and credentials.
//!
//! - [`DataCipher`]: AES-256-GCM for values we must read back (SSNs, partner
//!   signing secrets), bound by associated data to the column they live in.
//! - [`SsnCipher::search_hash`]: a keyed HMAC-SHA256 of an SSN, so an exact SSN
//!   can be found without decrypting every row.
//! - [`hash_password`] / [`verify_password`]: argon2id for passwords and client
//!   secrets.
//! - [`new_token`] / [`token_hash`]: opaque random tokens stored only as SHA-256.
//! - [`DataCipher::key_check_ciphertext`] / [`DataCipher::key_check_mac`]: what
//!   the `key_check` row holds, so that a binary started with a valid key that
//!   is not the data's is refused at start (`common/src/key_check.rs`).

use aes_gcm::{
    aead::{Aead, KeyInit, Payload},
    Aes256Gcm, Nonce,
};
use argon2::{
    password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
    Argon2,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::domain::Ssn;

const FORMAT_V1: u8 = 1;

/// Encrypted under the data key in the `key_check` row.
const DATA_KEY_CHECK: &[u8] = b"i9 DATA_ENCRYPTION_KEY check v1";
/// HMACed under the SSN hash key in the `key_check` row.
const HASH_KEY_CHECK: &[u8] = b"i9 SSN_HASH_KEY check v1";

/// What an encrypted value is; used as associated data so a ciphertext from
/// one column cannot be passed off as another.
#[derive(Clone, Copy, Debug)]
pub enum Purpose {
    EmployeeSsn,
    I9Ssn,
    SigningSecret,
    /// A Section 1 link token, kept so the remote-hire email can carry it.
    Section1Token,
    /// The fixed value of the `key_check` row.
    KeyCheck,
}

impl Purpose {
    fn aad(self) -> &'static [u8] {
        match self {
            Purpose::EmployeeSsn => b"employees.ssn",
            Purpose::I9Ssn => b"i9s.ssn",
            Purpose::SigningSecret => b"oauth_clients.signing_secret",
            Purpose::Section1Token => b"i9_requests.section1_token",
            Purpose::KeyCheck => b"key_check.data_key_ciphertext",
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("stored value could not be decrypted (wrong key or corrupt data)")]
pub struct DecryptError;

#[derive(Clone)]
pub struct DataCipher {
    cipher: Aes256Gcm,
    ssn_hash_key: Vec<u8>,
}

impl std::fmt::Debug for DataCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataCipher(..)")
    }
}

impl DataCipher {
    pub fn new(data_key: &[u8; 32], ssn_hash_key: &[u8]) -> Self {
        Self {
            cipher: Aes256Gcm::new(data_key.into()),
            ssn_hash_key: ssn_hash_key.to_vec(),
        }
    }

    pub fn from_config(config: &crate::Config) -> Self {
        Self::new(&config.data_key, &config.ssn_hash_key)
    }

    /// `version || nonce (12 bytes) || ciphertext+tag`.
    pub fn encrypt(&self, purpose: Purpose, plaintext: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut nonce);
        let sealed = self
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: purpose.aad(),
                },
            )
            .unwrap_or_default(); // AES-GCM encryption cannot fail for these sizes
        let mut out = Vec::with_capacity(1 + 12 + sealed.len());
        out.push(FORMAT_V1);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    pub fn decrypt(&self, purpose: Purpose, data: &[u8]) -> Result<Vec<u8>, DecryptError> {
        if data.len() < 1 + 12 + 16 || data[0] != FORMAT_V1 {
            return Err(DecryptError);
        }
        self.cipher
            .decrypt(
                Nonce::from_slice(&data[1..13]),
                Payload {
                    msg: &data[13..],
                    aad: purpose.aad(),
                },
            )
            .map_err(|_| DecryptError)
    }

    pub fn encrypt_ssn(&self, purpose: Purpose, ssn: &Ssn) -> Vec<u8> {
        self.encrypt(purpose, ssn.as_str().as_bytes())
    }

    pub fn decrypt_ssn(&self, purpose: Purpose, data: &[u8]) -> Result<Ssn, DecryptError> {
        let bytes = self.decrypt(purpose, data)?;
        let text = String::from_utf8(bytes).map_err(|_| DecryptError)?;
        Ssn::parse(&text).map_err(|_| DecryptError)
    }

    /// Keyed hash of the canonical `###-##-####` form, for exact-match search.
    pub fn ssn_search_hash(&self, ssn: &Ssn) -> Vec<u8> {
        self.hash_mac(ssn.as_str().as_bytes())
            .finalize()
            .into_bytes()
            .to_vec()
    }

    fn hash_mac(&self, message: &[u8]) -> Hmac<Sha256> {
        #[allow(clippy::unwrap_used)] // HMAC accepts keys of any length
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.ssn_hash_key).unwrap();
        mac.update(message);
        mac
    }

    /// A fresh ciphertext of a fixed value under the data key.
    pub fn key_check_ciphertext(&self) -> Vec<u8> {
        self.encrypt(Purpose::KeyCheck, DATA_KEY_CHECK)
    }

    /// Whether `ciphertext` (from [`Self::key_check_ciphertext`]) was made with this data key.
    pub fn data_key_matches(&self, ciphertext: &[u8]) -> bool {
        self.decrypt(Purpose::KeyCheck, ciphertext)
            .is_ok_and(|plain| plain == DATA_KEY_CHECK)
    }

    /// The HMAC of a fixed value under the SSN hash key.
    pub fn key_check_mac(&self) -> Vec<u8> {
        self.hash_mac(HASH_KEY_CHECK)
            .finalize()
            .into_bytes()
            .to_vec()
    }

    /// Whether `mac` (from [`Self::key_check_mac`]) was made with this hash key.
    pub fn hash_key_matches(&self, mac: &[u8]) -> bool {
        self.hash_mac(HASH_KEY_CHECK).verify_slice(mac).is_ok()
    }
}

/// argon2id with the crate's default (OWASP-recommended) parameters.
pub fn hash_password(password: &str) -> String {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .unwrap_or_default()
}

pub fn verify_password(password: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// Spend the same effort as a real verification, so that an unknown username
/// or client cannot be told from a wrong password by timing.
pub fn verify_password_dummy(password: &str) {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let phc = DUMMY.get_or_init(|| hash_password("dummy password for timing"));
    let _ = verify_password(password, phc);
}

/// A new opaque token: `prefix` + 256 random bits, base64url.
pub fn new_token(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// What is stored of a token: its SHA-256. Tokens carry 256 random bits, so a
/// fast hash is enough; the plaintext never reaches the database.
pub fn token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cipher() -> DataCipher {
        DataCipher::new(&[7u8; 32], &[9u8; 32])
    }

    #[test]
    fn encryption_round_trips_and_is_randomised() {
        let c = cipher();
        let ssn = Ssn::parse("123-45-6789").unwrap();
        let a = c.encrypt_ssn(Purpose::EmployeeSsn, &ssn);
        let b = c.encrypt_ssn(Purpose::EmployeeSsn, &ssn);
        assert_ne!(a, b, "a fresh nonce each time");
        assert!(!a.windows(11).any(|w| w == b"123-45-6789"));
        assert_eq!(c.decrypt_ssn(Purpose::EmployeeSsn, &a).unwrap(), ssn);
    }

    #[test]
    fn ciphertext_is_bound_to_its_purpose_and_key() {
        let c = cipher();
        let data = c.encrypt(Purpose::SigningSecret, b"secret");
        assert!(c.decrypt(Purpose::EmployeeSsn, &data).is_err());
        let other = DataCipher::new(&[8u8; 32], &[9u8; 32]);
        assert!(other.decrypt(Purpose::SigningSecret, &data).is_err());
        assert!(c.decrypt(Purpose::SigningSecret, &data[..10]).is_err());
    }

    #[test]
    fn search_hash_is_keyed_and_stable() {
        let ssn = Ssn::parse("123-45-6789").unwrap();
        assert_eq!(
            cipher().ssn_search_hash(&ssn),
            cipher().ssn_search_hash(&ssn)
        );
        let other = DataCipher::new(&[7u8; 32], &[1u8; 32]);
        assert_ne!(cipher().ssn_search_hash(&ssn), other.ssn_search_hash(&ssn));
    }

    #[test]
    fn key_checks_match_only_their_own_key() {
        let c = cipher();
        let (ct, mac) = (c.key_check_ciphertext(), c.key_check_mac());
        assert!(c.data_key_matches(&ct) && c.hash_key_matches(&mac));
        let other_data = DataCipher::new(&[8u8; 32], &[9u8; 32]);
        assert!(!other_data.data_key_matches(&ct) && other_data.hash_key_matches(&mac));
        let other_hash = DataCipher::new(&[7u8; 32], &[1u8; 32]);
        assert!(other_hash.data_key_matches(&ct) && !other_hash.hash_key_matches(&mac));
        // A ciphertext of another column under the right key is not a check value.
        assert!(!c.data_key_matches(&c.encrypt(Purpose::EmployeeSsn, DATA_KEY_CHECK)));
    }

    #[test]
    fn passwords_verify_only_with_the_right_secret() {
        let h = hash_password("correct horse");
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong horse", &h));
        assert!(!verify_password("x", "not a hash"));
    }

    #[test]
    fn tokens_are_long_random_and_hashed() {
        let a = new_token("i9at_");
        assert!(a.starts_with("i9at_") && a.len() >= 45);
        assert_ne!(a, new_token("i9at_"));
        assert_eq!(token_hash(&a).len(), 32);
    }
}
