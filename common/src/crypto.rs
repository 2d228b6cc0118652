//! Cryptography for personal data and credentials.
//!
//! - [`DataCipher`]: AES-256-GCM for values we must read back (SSNs, partner
//!   signing secrets, Section 1 link tokens), bound by associated data to the
//!   column they live in, under a ring of keys with ids (`common/src/keys.rs`).
//! - [`DataCipher::ssn_search_hash`]: a keyed HMAC-SHA256 of an SSN, so an
//!   exact SSN can be found without decrypting every row; its key rotates too.
//! - [`hash_password`] / [`verify_password`]: argon2id for passwords and client
//!   secrets.
//! - [`new_token`] / [`token_hash`]: opaque random tokens stored only as SHA-256.
//! - [`DataCipher::key_check_ciphertext`] / [`DataCipher::key_check_mac`]: what
//!   the `key_ring` table holds per key id, so that a binary started with a
//!   valid key that is not the data's is refused at start
//!   (`common/src/key_check.rs`).
//!
//! Stored formats (docs/operations.md, "Keys and rotation"):
//! - ciphertext version 2: `2 || key id (4 bytes, big-endian) || nonce (12) ||
//!   ciphertext+tag`; version 1 (written before key ids): `1 || nonce ||
//!   ciphertext+tag`, always key 1;
//! - SSN hash: `2 || key id (4 bytes) || HMAC (32)`; written before key ids:
//!   the 32-byte HMAC alone, under key 1.

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

use secrecy::ExposeSecret;

use crate::{
    domain::Ssn,
    keys::{self, DataKey, HashKey, KeyId, KeyRing},
};

const FORMAT_V1: u8 = 1;
const FORMAT_V2: u8 = 2;
const HASH_V2: u8 = 2;
/// Version and key id, in front of every value written now.
pub const PREFIX_LEN: usize = 5;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
const MAC_LEN: usize = 32;
/// The length of an SSN hash or a request fingerprint written now: version
/// and key id, then the HMAC.
pub const VERSIONED_HASH_LEN: usize = PREFIX_LEN + MAC_LEN;

/// Encrypted under each data key in the `key_ring` table.
const DATA_KEY_CHECK: &[u8] = b"i9 DATA_ENCRYPTION_KEY check v1";
/// HMACed under each SSN hash key in the `key_ring` table.
const HASH_KEY_CHECK: &[u8] = b"i9 SSN_HASH_KEY check v1";

/// What an encrypted value is; used as associated data so a ciphertext from
/// one column cannot be passed off as another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    EmployeeSsn,
    I9Ssn,
    /// A partner's signing secret, current or still in its overlap.
    SigningSecret,
    /// A Section 1 link token, kept so the remote-hire email can carry it.
    Section1Token,
    /// The fixed value of a data key's `key_ring` row.
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

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecryptError {
    /// The value names a key id the ring does not hold.
    #[error("stored value was encrypted under data key {0}, which DATA_ENCRYPTION_KEYS lacks")]
    UnknownKey(KeyId),
    #[error("stored value could not be decrypted (wrong key or corrupt data)")]
    Invalid,
}

/// An SSN hash key, made into its keyed HMAC once (the key's bytes are
/// read only then).
type HashMac = Hmac<Sha256>;

#[derive(Clone)]
pub struct DataCipher {
    /// The data keys, the current first.
    data: Vec<(KeyId, Aes256Gcm)>,
    hash: KeyRing<HashMac>,
}

impl std::fmt::Debug for DataCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DataCipher(data keys {:?}, hash keys {:?})",
            self.data_key_ids(),
            self.hash.ids().collect::<Vec<_>>()
        )
    }
}

/// `version || key id` of values written with key `id`.
fn prefix(version: u8, id: KeyId) -> [u8; PREFIX_LEN] {
    let [a, b, c, d] = id.to_be_bytes();
    [version, a, b, c, d]
}

impl DataCipher {
    /// One data key and one hash key, each as key id 1.
    pub fn new(data_key: &[u8; 32], ssn_hash_key: &[u8]) -> Self {
        Self::from_rings(
            &KeyRing::single(keys::data_key(*data_key)),
            &KeyRing::single(keys::hash_key(ssn_hash_key.to_vec())),
        )
    }

    /// The one place the keys' bytes are read: each becomes its cipher or
    /// keyed MAC.
    pub fn from_rings(data: &KeyRing<DataKey>, hash: &KeyRing<HashKey>) -> Self {
        Self {
            data: data
                .iter()
                .map(|(id, k)| (id, Aes256Gcm::new((&k.expose_secret().0).into())))
                .collect(),
            hash: hash.map(|k| keyed(k.expose_secret())),
        }
    }

    pub fn from_config(config: &crate::Config) -> Self {
        Self::from_rings(&config.data_keys, &config.ssn_hash_keys)
    }

    /// The data key ids, the current first.
    pub fn data_key_ids(&self) -> Vec<KeyId> {
        self.data.iter().map(|(id, _)| *id).collect()
    }

    /// The SSN hash key ids, the current first.
    pub fn hash_key_ids(&self) -> Vec<KeyId> {
        self.hash.ids().collect()
    }

    fn data_key(&self, id: KeyId) -> Option<&Aes256Gcm> {
        self.data.iter().find(|(i, _)| *i == id).map(|(_, k)| k)
    }

    /// What every ciphertext written now begins with: version 2 and the
    /// current key id. A value that does not is rewritten by `i9-admin rekey`.
    pub fn current_prefix(&self) -> [u8; PREFIX_LEN] {
        prefix(FORMAT_V2, self.data[0].0)
    }

    /// `version 2 || key id || nonce || ciphertext+tag` under the current key.
    pub fn encrypt(&self, purpose: Purpose, plaintext: &[u8]) -> Vec<u8> {
        let (id, key) = &self.data[0];
        seal(*id, key, purpose, plaintext)
    }

    /// The key id a stored ciphertext names (version 1: key 1).
    pub fn key_id_of(data: &[u8]) -> Option<KeyId> {
        match data.first() {
            Some(&FORMAT_V1) => Some(1),
            Some(&FORMAT_V2) if data.len() >= PREFIX_LEN => {
                let mut id = [0u8; 4];
                id.copy_from_slice(&data[1..PREFIX_LEN]);
                Some(KeyId::from_be_bytes(id))
            }
            _ => None,
        }
    }

    pub fn decrypt(&self, purpose: Purpose, data: &[u8]) -> Result<Vec<u8>, DecryptError> {
        let header = match data.first() {
            Some(&FORMAT_V1) => 1,
            Some(&FORMAT_V2) => PREFIX_LEN,
            _ => return Err(DecryptError::Invalid),
        };
        if data.len() < header + NONCE_LEN + TAG_LEN {
            return Err(DecryptError::Invalid);
        }
        let id = Self::key_id_of(data).ok_or(DecryptError::Invalid)?;
        let key = self.data_key(id).ok_or(DecryptError::UnknownKey(id))?;
        key.decrypt(
            Nonce::from_slice(&data[header..header + NONCE_LEN]),
            Payload {
                msg: &data[header + NONCE_LEN..],
                aad: purpose.aad(),
            },
        )
        .map_err(|_| DecryptError::Invalid)
    }

    /// `data` encrypted under the current key, or None if it already is.
    pub fn reencrypt(
        &self,
        purpose: Purpose,
        data: &[u8],
    ) -> Result<Option<Vec<u8>>, DecryptError> {
        if data.starts_with(&self.current_prefix()) {
            return Ok(None);
        }
        let plain = self.decrypt(purpose, data)?;
        Ok(Some(self.encrypt(purpose, &plain)))
    }

    pub fn encrypt_ssn(&self, purpose: Purpose, ssn: &Ssn) -> Vec<u8> {
        self.encrypt(purpose, ssn.as_str().as_bytes())
    }

    pub fn decrypt_ssn(&self, purpose: Purpose, data: &[u8]) -> Result<Ssn, DecryptError> {
        let bytes = self.decrypt(purpose, data)?;
        let text = String::from_utf8(bytes).map_err(|_| DecryptError::Invalid)?;
        Ssn::parse(&text).map_err(|_| DecryptError::Invalid)
    }

    /// What every SSN hash written now begins with (version and current hash key id).
    pub fn current_hash_prefix(&self) -> [u8; PREFIX_LEN] {
        prefix(HASH_V2, self.hash.current().0)
    }

    /// The SSN's hash to store: keyed by the current hash key, of the
    /// canonical `###-##-####` form, for exact-match search.
    pub fn ssn_search_hash(&self, ssn: &Ssn) -> Vec<u8> {
        let (id, key) = self.hash.current();
        versioned_hash(id, key, ssn)
    }

    /// Every form the SSN's stored hash may take under the ring's keys: what
    /// a search or the uniqueness check looks for, so that records hashed
    /// under an older key are found while a rotation is under way.
    pub fn ssn_search_hashes(&self, ssn: &Ssn) -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = self
            .hash
            .iter()
            .map(|(id, key)| versioned_hash(id, key, ssn))
            .collect();
        if let Some(key) = self.hash.get(1) {
            // Written before key ids: the bare HMAC under key 1.
            all.push(hmac(key, ssn.as_str().as_bytes()));
        }
        all
    }

    /// The hash key id a stored SSN hash was made with.
    pub fn hash_key_id_of(stored: &[u8]) -> Option<KeyId> {
        Self::hash_key_id_from(stored.len(), stored)
    }

    /// The hash key id of a stored SSN hash of `len` bytes that begins with
    /// `head` (its first [`PREFIX_LEN`] bytes or more; only a value of the
    /// versioned length needs them): what counting values per key reads
    /// without fetching each (`common/src/key_usage.rs`).
    pub fn hash_key_id_from(len: usize, head: &[u8]) -> Option<KeyId> {
        match (len, head.first()) {
            (MAC_LEN, _) => Some(1),
            (VERSIONED_HASH_LEN, Some(&HASH_V2)) if head.len() >= PREFIX_LEN => {
                let mut id = [0u8; 4];
                id.copy_from_slice(&head[1..PREFIX_LEN]);
                Some(KeyId::from_be_bytes(id))
            }
            _ => None,
        }
    }

    /// The hash key id a stored request fingerprint of `len` bytes beginning
    /// with `head` was made with; None for a bare SHA-256 (made before
    /// fingerprints were keyed: no key) or another shape.
    pub fn fingerprint_key_id_from(len: usize, head: &[u8]) -> Option<KeyId> {
        if len == MAC_LEN {
            return None;
        }
        Self::hash_key_id_from(len, head)
    }

    /// A keyed fingerprint of a request's path and body, for `Idempotency-Key`
    /// (docs/api.md, "Idempotency"): a body may hold an SSN and a date of
    /// birth, which a plain hash would give away to anyone trying numbers.
    /// Made with the current SSN hash key, kept apart from the SSN hashes by
    /// its own label, and naming its key id as they do.
    pub fn request_fingerprint(&self, message: &[u8]) -> Vec<u8> {
        let (id, key) = self.hash.current();
        fingerprint(id, key, message)
    }

    /// Whether `stored` is `message`'s fingerprint under the key it names
    /// (false when the ring no longer has that key). A bare SHA-256, as
    /// records made before fingerprints were keyed hold, matches too: such
    /// records are gone 24 hours after the upgrade.
    pub fn request_fingerprint_matches(&self, stored: &[u8], message: &[u8]) -> bool {
        if stored.len() == MAC_LEN {
            return Sha256::digest(message).as_slice() == stored;
        }
        match Self::fingerprint_key_id_from(stored.len(), stored) {
            Some(id) => self.hash.get(id).is_some_and(|key| {
                fingerprint_mac(key, message)
                    .verify_slice(&stored[PREFIX_LEN..])
                    .is_ok()
            }),
            _ => false,
        }
    }

    /// A ciphertext of a fixed value under data key `id`; None if the ring lacks it.
    pub fn key_check_ciphertext(&self, id: KeyId) -> Option<Vec<u8>> {
        Some(seal(
            id,
            self.data_key(id)?,
            Purpose::KeyCheck,
            DATA_KEY_CHECK,
        ))
    }

    /// Whether `ciphertext` (from [`Self::key_check_ciphertext`]) was made
    /// with this ring's data key `id`; None if the ring lacks it.
    pub fn data_key_matches(&self, id: KeyId, ciphertext: &[u8]) -> Option<bool> {
        self.data_key(id)?;
        Some(
            Self::key_id_of(ciphertext) == Some(id)
                && self
                    .decrypt(Purpose::KeyCheck, ciphertext)
                    .is_ok_and(|plain| plain == DATA_KEY_CHECK),
        )
    }

    /// The HMAC of a fixed value under hash key `id`; None if the ring lacks it.
    pub fn key_check_mac(&self, id: KeyId) -> Option<Vec<u8>> {
        Some(hmac(self.hash.get(id)?, HASH_KEY_CHECK))
    }

    /// Whether `mac` (from [`Self::key_check_mac`]) was made with this
    /// ring's hash key `id`; None if the ring lacks it.
    pub fn hash_key_matches(&self, id: KeyId, mac: &[u8]) -> Option<bool> {
        let key = self.hash.get(id)?;
        Some(mac_of(key, HASH_KEY_CHECK).verify_slice(mac).is_ok())
    }
}

fn seal(id: KeyId, key: &Aes256Gcm, purpose: Purpose, plaintext: &[u8]) -> Vec<u8> {
    let mut nonce = [0u8; NONCE_LEN];
    rand::thread_rng().fill_bytes(&mut nonce);
    let sealed = key
        .encrypt(
            Nonce::from_slice(&nonce),
            Payload {
                msg: plaintext,
                aad: purpose.aad(),
            },
        )
        .unwrap_or_default(); // AES-GCM encryption cannot fail for these sizes
    let mut out = Vec::with_capacity(PREFIX_LEN + NONCE_LEN + sealed.len());
    out.extend_from_slice(&prefix(FORMAT_V2, id));
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    out
}

/// An HMAC-SHA256 keyed with `key`: what a hash key's bytes become, once.
fn keyed(key: &[u8]) -> HashMac {
    #[allow(clippy::unwrap_used)] // HMAC accepts keys of any length
    <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap()
}

fn mac_of(key: &HashMac, message: &[u8]) -> Hmac<Sha256> {
    let mut mac = key.clone();
    mac.update(message);
    mac
}

fn hmac(key: &HashMac, message: &[u8]) -> Vec<u8> {
    mac_of(key, message).finalize().into_bytes().to_vec()
}

const FINGERPRINT_LABEL: &[u8] = b"i9 request fingerprint v1\n";

fn fingerprint_mac(key: &HashMac, message: &[u8]) -> Hmac<Sha256> {
    let mut mac = mac_of(key, FINGERPRINT_LABEL);
    mac.update(message);
    mac
}

fn fingerprint(id: KeyId, key: &HashMac, message: &[u8]) -> Vec<u8> {
    let mut out = prefix(HASH_V2, id).to_vec();
    out.extend_from_slice(&fingerprint_mac(key, message).finalize().into_bytes());
    out
}

fn versioned_hash(id: KeyId, key: &HashMac, ssn: &Ssn) -> Vec<u8> {
    let mut out = prefix(HASH_V2, id).to_vec();
    out.extend_from_slice(&hmac(key, ssn.as_str().as_bytes()));
    out
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

    /// A ring of these keys' bytes: data keys for `[u8; 32]`, hash keys
    /// for `Vec<u8>`.
    fn ring<K: Clone + IntoKey>(keys: &[(KeyId, K)]) -> KeyRing<K::Key> {
        KeyRing::new(
            keys.iter()
                .map(|(id, k)| (*id, k.clone().into_key()))
                .collect(),
        )
        .unwrap()
    }

    trait IntoKey {
        type Key;
        fn into_key(self) -> Self::Key;
    }

    impl IntoKey for [u8; 32] {
        type Key = DataKey;
        fn into_key(self) -> DataKey {
            keys::data_key(self)
        }
    }

    impl IntoKey for Vec<u8> {
        type Key = HashKey;
        fn into_key(self) -> HashKey {
            keys::hash_key(self)
        }
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
        assert_eq!(&a[..PREFIX_LEN], &[2, 0, 0, 0, 1], "version 2, key 1");
    }

    #[test]
    fn request_fingerprints_are_keyed_and_follow_the_hash_ring() {
        let body = br#"POST /v1/employees
{"socialSecurityNumber":"123-45-6789"}"#;
        let old = DataCipher::from_rings(&ring(&[(1, [7u8; 32])]), &ring(&[(1, vec![9u8; 32])]));
        let stored = old.request_fingerprint(body);
        assert_eq!(&stored[..PREFIX_LEN], &[2, 0, 0, 0, 1]);
        assert_ne!(
            &stored[PREFIX_LEN..],
            Sha256::digest(body).as_slice(),
            "keyed"
        );
        assert_ne!(
            stored,
            old.ssn_search_hash(&Ssn::parse("123-45-6789").unwrap()),
            "not an SSN hash"
        );
        assert!(old.request_fingerprint_matches(&stored, body));
        assert!(!old.request_fingerprint_matches(&stored, b"another body"));
        // A new hash key current, the old one still in the ring: both match.
        let both = DataCipher::from_rings(
            &ring(&[(1, [7u8; 32])]),
            &ring(&[(2, vec![3u8; 32]), (1, vec![9u8; 32])]),
        );
        assert!(both.request_fingerprint_matches(&stored, body));
        let fresh = both.request_fingerprint(body);
        assert_eq!(&fresh[..PREFIX_LEN], &[2, 0, 0, 0, 2]);
        assert!(both.request_fingerprint_matches(&fresh, body));
        // The old key gone: records made under it no longer match.
        let new = DataCipher::from_rings(&ring(&[(1, [7u8; 32])]), &ring(&[(2, vec![3u8; 32])]));
        assert!(!new.request_fingerprint_matches(&stored, body));
        // Records made before fingerprints were keyed: a bare SHA-256.
        assert!(new.request_fingerprint_matches(&Sha256::digest(body), body));
        assert!(!new.request_fingerprint_matches(&[2, 0, 0], body));
    }

    #[test]
    fn ciphertext_is_bound_to_its_purpose_and_key() {
        let c = cipher();
        let data = c.encrypt(Purpose::SigningSecret, b"secret");
        assert!(c.decrypt(Purpose::EmployeeSsn, &data).is_err());
        let other = DataCipher::new(&[8u8; 32], &[9u8; 32]);
        assert_eq!(
            other.decrypt(Purpose::SigningSecret, &data),
            Err(DecryptError::Invalid)
        );
        assert!(c.decrypt(Purpose::SigningSecret, &data[..10]).is_err());
        assert!(c.decrypt(Purpose::SigningSecret, &[]).is_err());
    }

    /// A version-1 value as written before key ids (`1 || nonce || ciphertext`).
    fn v1(key: &[u8; 32], purpose: Purpose, plain: &[u8]) -> Vec<u8> {
        let mut v = seal(1, &Aes256Gcm::new(key.into()), purpose, plain);
        v.drain(0..PREFIX_LEN);
        v.insert(0, FORMAT_V1);
        v
    }

    #[test]
    fn a_ring_writes_with_its_first_key_and_reads_with_any() {
        let old = DataCipher::from_rings(&ring(&[(1, [1u8; 32])]), &ring(&[(1, vec![9u8; 32])]));
        let both = DataCipher::from_rings(
            &ring(&[(2, [2u8; 32]), (1, [1u8; 32])]),
            &ring(&[(1, vec![9u8; 32])]),
        );
        let new = DataCipher::from_rings(&ring(&[(2, [2u8; 32])]), &ring(&[(1, vec![9u8; 32])]));
        let under_1 = old.encrypt(Purpose::I9Ssn, b"x");
        let legacy = v1(&[1u8; 32], Purpose::I9Ssn, b"y");
        let under_2 = both.encrypt(Purpose::I9Ssn, b"z");
        assert_eq!(DataCipher::key_id_of(&under_1), Some(1));
        assert_eq!(DataCipher::key_id_of(&legacy), Some(1));
        assert_eq!(DataCipher::key_id_of(&under_2), Some(2));
        assert_eq!(both.decrypt(Purpose::I9Ssn, &under_1).unwrap(), b"x");
        assert_eq!(both.decrypt(Purpose::I9Ssn, &legacy).unwrap(), b"y");
        assert_eq!(new.decrypt(Purpose::I9Ssn, &under_2).unwrap(), b"z");
        assert_eq!(
            new.decrypt(Purpose::I9Ssn, &legacy),
            Err(DecryptError::UnknownKey(1))
        );
        assert_eq!(
            old.decrypt(Purpose::I9Ssn, &under_2),
            Err(DecryptError::UnknownKey(2))
        );
        // Rekeying: values under key 1 are rewritten under 2, values under 2 are left.
        let rekeyed = both.reencrypt(Purpose::I9Ssn, &legacy).unwrap().unwrap();
        assert!(rekeyed.starts_with(&both.current_prefix()));
        assert_eq!(new.decrypt(Purpose::I9Ssn, &rekeyed).unwrap(), b"y");
        assert_eq!(both.reencrypt(Purpose::I9Ssn, &under_2), Ok(None));
    }

    #[test]
    fn search_hash_is_keyed_stable_and_found_under_every_key_of_the_ring() {
        let ssn = Ssn::parse("123-45-6789").unwrap();
        assert_eq!(
            cipher().ssn_search_hash(&ssn),
            cipher().ssn_search_hash(&ssn)
        );
        let other = DataCipher::new(&[7u8; 32], &[1u8; 32]);
        assert_ne!(cipher().ssn_search_hash(&ssn), other.ssn_search_hash(&ssn));

        let data = ring(&[(1, [7u8; 32])]);
        let old = DataCipher::from_rings(&data, &ring(&[(1, vec![9u8; 32])]));
        let both = DataCipher::from_rings(&data, &ring(&[(2, vec![8u8; 32]), (1, vec![9u8; 32])]));
        let stored_old = old.ssn_search_hash(&ssn);
        let legacy = hmac(&keyed(&[9u8; 32]), ssn.as_str().as_bytes());
        let stored_new = both.ssn_search_hash(&ssn);
        assert_eq!(DataCipher::hash_key_id_of(&stored_old), Some(1));
        assert_eq!(DataCipher::hash_key_id_of(&legacy), Some(1));
        assert_eq!(DataCipher::hash_key_id_of(&stored_new), Some(2));
        assert!(stored_new.starts_with(&both.current_hash_prefix()));
        let candidates = both.ssn_search_hashes(&ssn);
        assert_eq!(candidates.len(), 3, "key 2, key 1, key 1 before ids");
        for stored in [&stored_old, &legacy, &stored_new] {
            assert!(candidates.contains(stored));
        }
        let other_ssn = Ssn::parse("123-45-6788").unwrap();
        assert!(!both.ssn_search_hashes(&other_ssn).contains(&stored_new));
    }

    #[test]
    fn key_checks_match_only_their_own_key() {
        let c = cipher();
        let (ct, mac) = (
            c.key_check_ciphertext(1).unwrap(),
            c.key_check_mac(1).unwrap(),
        );
        assert_eq!(c.data_key_matches(1, &ct), Some(true));
        assert_eq!(c.hash_key_matches(1, &mac), Some(true));
        assert_eq!(c.key_check_ciphertext(2), None);
        assert_eq!(c.data_key_matches(2, &ct), None, "not in the ring");
        let other_data = DataCipher::new(&[8u8; 32], &[9u8; 32]);
        assert_eq!(other_data.data_key_matches(1, &ct), Some(false));
        assert_eq!(other_data.hash_key_matches(1, &mac), Some(true));
        let other_hash = DataCipher::new(&[7u8; 32], &[1u8; 32]);
        assert_eq!(other_hash.data_key_matches(1, &ct), Some(true));
        assert_eq!(other_hash.hash_key_matches(1, &mac), Some(false));
        // A ciphertext of another column under the right key is not a check value.
        assert_eq!(
            c.data_key_matches(1, &c.encrypt(Purpose::EmployeeSsn, DATA_KEY_CHECK)),
            Some(false)
        );
        // The same key under another id does not pass for that id's check.
        let renamed = DataCipher::from_rings(
            &ring(&[(2, [7u8; 32]), (1, [7u8; 32])]),
            &ring(&[(1, vec![9u8; 32])]),
        );
        assert_eq!(renamed.data_key_matches(2, &ct), Some(false));
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
