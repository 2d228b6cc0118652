//! The keys the binaries run with, read from the environment, failing closed
//! (docs/operations.md, "Keys and rotation").
//!
//! Two key rings, each a list of keys with ids, the first the current one:
//!
//! - the data key ring (AES-256-GCM; SSNs, partner signing secrets, Section 1
//!   link tokens): `DATA_ENCRYPTION_KEYS`, or the single `DATA_ENCRYPTION_KEY`;
//! - the SSN hash key ring (HMAC-SHA256 of the searchable SSN hash):
//!   `SSN_HASH_KEYS`, or the single `SSN_HASH_KEY`.
//!
//! A ring is written `ID:BASE64`, entries separated by commas (or white
//! space, or new lines in a `_FILE`): `DATA_ENCRYPTION_KEYS="2:<base64>,1:<base64>"`
//! encrypts with key 2 and still decrypts what key 1 encrypted. Ids are whole
//! numbers from 1 to 4294967295, never reused for another key. The single
//! form is key id 1. Base64 may be standard or URL-safe, with or without
//! padding. A data key is 32 bytes, a hash key at least 32.
//!
//! Without keys the binaries refuse to start, unless `APP_ENV=development` is
//! set explicitly: only then do they fall back to the development keys
//! published in this repository. Any other `APP_ENV` (or none) refuses those
//! keys too, compared by their decoded bytes whatever their spelling.

use anyhow::{bail, Context};
use base64::{
    alphabet,
    engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig},
    Engine as _,
};
use secrecy::{ExposeSecret, SecretBox, SecretSlice};

/// A key's id: written into every ciphertext and stored SSN hash made with it.
pub type KeyId = u32;

/// A data key (AES-256-GCM): redacted in `Debug`, wiped when dropped; its
/// bytes only through `expose_secret()`, where a cipher is made of it
/// (`common/src/crypto.rs`).
pub type DataKey = SecretBox<DataKeyBytes>;

/// The 32 bytes of a data key (a type of its own so that a ring of them may
/// be cloned: `secrecy` clones only what is marked `CloneableSecret`).
#[derive(Clone)]
pub struct DataKeyBytes(pub [u8; 32]);

impl secrecy::zeroize::Zeroize for DataKeyBytes {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl secrecy::CloneableSecret for DataKeyBytes {}
/// An SSN hash key (HMAC-SHA256, 32 bytes or more), held as a data key is.
pub type HashKey = SecretSlice<u8>;

/// Development-only keys, published here. Never accepted unless
/// `APP_ENV=development`.
const DEV_DATA_KEY: &str = "ZGV2LW9ubHktZGF0YS1lbmNyeXB0aW9uLWtleS0zMmI=";
const DEV_HASH_KEY: &str = "ZGV2LW9ubHktc3NuLXNlYXJjaC1oYXNoLWtleS0zMmJ5dGU=";

/// The two spellings of base64 a key may use, padding optional.
const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD_ANY: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
const URL_SAFE_ANY: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

/// Keys with ids, the first the current one (what new values are written
/// with); the others only read what they wrote. Never empty; ids distinct.
#[derive(Clone)]
pub struct KeyRing<K> {
    entries: Vec<(KeyId, K)>,
}

impl<K> std::fmt::Debug for KeyRing<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Ids only: key bytes never reach a log line.
        write!(f, "KeyRing(ids {:?})", self.ids().collect::<Vec<_>>())
    }
}

impl<K> KeyRing<K> {
    /// A ring of `entries`, the first current.
    pub fn new(entries: Vec<(KeyId, K)>) -> anyhow::Result<Self> {
        if entries.is_empty() {
            bail!("a key ring needs at least one key");
        }
        for (i, (id, _)) in entries.iter().enumerate() {
            if *id == 0 {
                bail!("key ids start at 1");
            }
            if entries[..i].iter().any(|(other, _)| other == id) {
                bail!("key id {id} appears twice");
            }
        }
        Ok(Self { entries })
    }

    /// One key, with id 1 (what the single-key settings mean).
    pub fn single(key: K) -> Self {
        Self {
            entries: vec![(1, key)],
        }
    }

    /// The key new values are written with.
    pub fn current(&self) -> (KeyId, &K) {
        let (id, key) = &self.entries[0];
        (*id, key)
    }

    pub fn get(&self, id: KeyId) -> Option<&K> {
        self.entries.iter().find(|(i, _)| *i == id).map(|(_, k)| k)
    }

    pub fn ids(&self) -> impl Iterator<Item = KeyId> + '_ {
        self.entries.iter().map(|(id, _)| *id)
    }

    pub fn iter(&self) -> impl Iterator<Item = (KeyId, &K)> + '_ {
        self.entries.iter().map(|(id, k)| (*id, k))
    }

    pub fn map<T>(&self, f: impl Fn(&K) -> T) -> KeyRing<T> {
        KeyRing {
            entries: self.entries.iter().map(|(id, k)| (*id, f(k))).collect(),
        }
    }
}

impl KeyRing<DataKey> {
    /// The ids and bytes of every key, for comparing rings (tests).
    pub fn exposed(&self) -> Vec<(KeyId, [u8; 32])> {
        self.iter()
            .map(|(id, k)| (id, k.expose_secret().0))
            .collect()
    }
}

impl KeyRing<HashKey> {
    /// The ids and bytes of every key, for comparing rings (tests).
    pub fn exposed(&self) -> Vec<(KeyId, Vec<u8>)> {
        self.iter()
            .map(|(id, k)| (id, k.expose_secret().to_vec()))
            .collect()
    }
}

/// A data key of these bytes.
pub fn data_key(bytes: [u8; 32]) -> DataKey {
    SecretBox::new(Box::new(DataKeyBytes(bytes)))
}

/// An SSN hash key of these bytes.
pub fn hash_key(bytes: Vec<u8>) -> HashKey {
    SecretSlice::from(bytes)
}

/// The keys a binary runs with.
#[derive(Clone, Debug)]
pub struct Keys {
    pub data: KeyRing<DataKey>,
    pub ssn_hash: KeyRing<HashKey>,
}

/// One ring's settings: the ring variable and its single-key form.
struct Setting {
    ring: &'static str,
    single: &'static str,
    /// Exact size of a data key; minimum size of a hash key.
    size: usize,
    exact: bool,
}

const DATA: Setting = Setting {
    ring: "DATA_ENCRYPTION_KEYS",
    single: "DATA_ENCRYPTION_KEY",
    size: 32,
    exact: true,
};
const HASH: Setting = Setting {
    ring: "SSN_HASH_KEYS",
    single: "SSN_HASH_KEY",
    size: 32,
    exact: false,
};

impl Keys {
    /// The development keys, each as key id 1.
    pub fn development() -> Self {
        #[allow(clippy::unwrap_used)] // constants known to decode to 32+ bytes
        Self {
            data: KeyRing::single(data_key(decode(DEV_DATA_KEY).unwrap().try_into().unwrap())),
            ssn_hash: KeyRing::single(hash_key(decode(DEV_HASH_KEY).unwrap())),
        }
    }

    /// The keys from the settings: `app_env` is `APP_ENV`, `secret` reads a
    /// secret setting by name (with its `_FILE` form). Fails closed: without
    /// keys, or with a development key, only `APP_ENV=development` starts.
    pub fn from_settings(
        app_env: Option<&str>,
        secret: impl Fn(&str) -> anyhow::Result<Option<String>>,
    ) -> anyhow::Result<Self> {
        let development = is_development(app_env);
        let data = read_ring(&DATA, &secret)?;
        let hash = read_ring(&HASH, &secret)?;
        if !development {
            let missing: Vec<String> = [(&DATA, &data), (&HASH, &hash)]
                .into_iter()
                .filter(|(_, ring)| ring.is_none())
                .map(|(s, _)| format!("{} (or {}, or either's _FILE)", s.ring, s.single))
                .collect();
            if !missing.is_empty() {
                bail!(
                    "no keys: set {}. The built-in development keys are used only with \
                     APP_ENV=development, and {}",
                    missing.join(" and "),
                    describe_app_env(app_env)
                );
            }
            let dev = Self::development();
            let dev_bytes = [
                dev.data.current().1.expose_secret().0.to_vec(),
                dev.ssn_hash.current().1.expose_secret().to_vec(),
            ];
            for (setting, ring) in [(&DATA, &data), (&HASH, &hash)] {
                for (id, key) in ring.iter().flat_map(KeyRing::iter) {
                    if dev_bytes.contains(key) {
                        bail!(
                            "{} key {id} is a built-in development key, published in the source: \
                             generate a real one (openssl rand -base64 32); {}",
                            setting.ring,
                            describe_app_env(app_env)
                        );
                    }
                }
            }
        }
        let dev = Self::development();
        let data = match data {
            // Sizes were checked as the ring was read.
            Some(ring) => KeyRing::new(
                ring.entries
                    .into_iter()
                    .map(|(id, k)| {
                        <[u8; 32]>::try_from(k)
                            .map(|k| (id, data_key(k)))
                            .map_err(|_| anyhow::anyhow!("{} key {id}: not 32 bytes", DATA.ring))
                    })
                    .collect::<anyhow::Result<_>>()?,
            )?,
            None => dev.data,
        };
        Ok(Self {
            data,
            ssn_hash: match hash {
                Some(ring) => ring.map(|k| hash_key(k.clone())),
                None => dev.ssn_hash,
            },
        })
    }
}

/// Whether `APP_ENV` is `development`, the one value that allows the development keys.
pub fn is_development(app_env: Option<&str>) -> bool {
    app_env.is_some_and(|v| v.trim().eq_ignore_ascii_case("development"))
}

fn describe_app_env(app_env: Option<&str>) -> String {
    match app_env.map(str::trim).filter(|v| !v.is_empty()) {
        None => "APP_ENV is not set".to_owned(),
        Some(v) => format!("APP_ENV is {v:?}"),
    }
}

/// Base64 in either alphabet, padding optional, surrounding space ignored.
fn decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    STANDARD_ANY
        .decode(text)
        .or_else(|_| URL_SAFE_ANY.decode(text))
        .ok()
}

/// The ring from `setting.ring` or `setting.single` (as key 1); None if neither is set.
fn read_ring(
    setting: &Setting,
    secret: &impl Fn(&str) -> anyhow::Result<Option<String>>,
) -> anyhow::Result<Option<KeyRing<Vec<u8>>>> {
    let ring = secret(setting.ring)?;
    let single = secret(setting.single)?;
    let entries = match (ring, single) {
        (Some(_), Some(_)) => bail!("set {} or {}, not both", setting.ring, setting.single),
        (None, None) => return Ok(None),
        (None, Some(key)) => vec![(1, decode_key(setting, setting.single, &key)?)],
        (Some(text), None) => parse_ring(setting, &text)?,
    };
    let ring = KeyRing::new(entries).context(setting.ring)?;
    for (i, (id, key)) in ring.entries.iter().enumerate() {
        if let Some((other, _)) = ring.entries[..i].iter().find(|(_, k)| k == key) {
            bail!("{}: keys {other} and {id} are the same key", setting.ring);
        }
    }
    Ok(Some(ring))
}

fn parse_ring(setting: &Setting, text: &str) -> anyhow::Result<Vec<(KeyId, Vec<u8>)>> {
    let mut entries = Vec::new();
    for (n, entry) in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|e| !e.is_empty())
        .enumerate()
    {
        let (id, key) = entry.split_once(':').with_context(|| {
            format!(
                "{}: entry {} is not ID:BASE64 (e.g. 2:<key>,1:<key>)",
                setting.ring,
                n + 1
            )
        })?;
        let id: KeyId = match id.parse() {
            Ok(0) => bail!(
                "{}: entry {} has key id 0, but ids start at 1 (a whole number from 1 to {})",
                setting.ring,
                n + 1,
                KeyId::MAX
            ),
            Ok(id) => id,
            // Digits only (the id is not secret): too large for an id.
            Err(_) if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) => bail!(
                "{}: entry {} has key id {id}, out of range: ids are 1 to {}",
                setting.ring,
                n + 1,
                KeyId::MAX
            ),
            Err(_) => bail!(
                "{}: entry {} has no key id (a whole number from 1 to {})",
                setting.ring,
                n + 1,
                KeyId::MAX
            ),
        };
        let name = format!("{} key {id}", setting.ring);
        entries.push((id, decode_key(setting, &name, key)?));
    }
    if entries.is_empty() {
        bail!("{} is empty", setting.ring);
    }
    Ok(entries)
}

/// The key's bytes, of the right size; `name` says which key in errors (the
/// value itself is never printed).
fn decode_key(setting: &Setting, name: &str, text: &str) -> anyhow::Result<Vec<u8>> {
    let bytes = decode(text).with_context(|| format!("{name} must be base64"))?;
    if setting.exact && bytes.len() != setting.size {
        bail!("{name} must decode to exactly {} bytes", setting.size);
    }
    if bytes.len() < setting.size {
        bail!("{name} must decode to at least {} bytes", setting.size);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use std::collections::HashMap;

    const K1: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
    const K2: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=";
    const K3: &str = "AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=";

    fn keys(app_env: Option<&str>, vars: &[(&str, &str)]) -> anyhow::Result<Keys> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Keys::from_settings(app_env, |name| Ok(vars.get(name).cloned()))
    }

    fn err(app_env: Option<&str>, vars: &[(&str, &str)]) -> String {
        format!("{:#}", keys(app_env, vars).unwrap_err())
    }

    #[test]
    fn without_keys_only_app_env_development_starts() {
        for app_env in [
            None,
            Some(""),
            Some("production"),
            Some("prod"),
            Some("staging"),
        ] {
            let e = err(app_env, &[]);
            assert!(
                e.contains("DATA_ENCRYPTION_KEYS")
                    && e.contains("SSN_HASH_KEYS")
                    && e.contains("APP_ENV=development"),
                "{app_env:?}: {e}"
            );
        }
        assert!(err(None, &[]).contains("APP_ENV is not set"));
        // One of the two missing: only that one is named.
        let e = err(Some("production"), &[("DATA_ENCRYPTION_KEY", K1)]);
        assert!(
            e.contains("SSN_HASH_KEYS") && !e.contains("DATA_ENCRYPTION_KEYS"),
            "{e}"
        );
        for app_env in ["development", " Development "] {
            let k = keys(Some(app_env), &[]).unwrap();
            assert_eq!(k.data.exposed(), Keys::development().data.exposed());
            assert_eq!(k.ssn_hash.exposed(), Keys::development().ssn_hash.exposed());
        }
    }

    #[test]
    fn development_keys_are_refused_by_their_bytes_whatever_the_spelling() {
        let dev_data = STANDARD.decode(DEV_DATA_KEY).unwrap();
        let spellings = [
            DEV_DATA_KEY.to_owned(),
            format!("  {DEV_DATA_KEY}\n"),
            URL_SAFE_NO_PAD.encode(&dev_data),
            DEV_DATA_KEY.trim_end_matches('=').to_owned(),
        ];
        for s in &spellings {
            for app_env in [None, Some("production")] {
                let e = err(app_env, &[("DATA_ENCRYPTION_KEY", s), ("SSN_HASH_KEY", K2)]);
                assert!(e.contains("development key"), "{s:?}: {e}");
                let e = err(
                    app_env,
                    &[
                        ("DATA_ENCRYPTION_KEYS", &format!("2:{K1}, 1:{}", s.trim())),
                        ("SSN_HASH_KEY", K2),
                    ],
                );
                assert!(
                    e.contains("DATA_ENCRYPTION_KEYS key 1 is a built-in development key"),
                    "{e}"
                );
            }
        }
        // The hash key too, and each development key in the other ring.
        let e = err(
            Some("production"),
            &[
                ("DATA_ENCRYPTION_KEY", K1),
                ("SSN_HASH_KEY", &format!(" {DEV_HASH_KEY} ")),
            ],
        );
        assert!(
            e.contains("SSN_HASH_KEYS key 1 is a built-in development key"),
            "{e}"
        );
        let e = err(
            Some("production"),
            &[("DATA_ENCRYPTION_KEY", K1), ("SSN_HASH_KEY", DEV_DATA_KEY)],
        );
        assert!(e.contains("development key"), "{e}");
        // In development they are fine.
        keys(
            Some("development"),
            &[("DATA_ENCRYPTION_KEY", DEV_DATA_KEY)],
        )
        .unwrap();
    }

    #[test]
    fn a_ring_lists_ids_and_keys_the_first_current() {
        let k = keys(
            Some("production"),
            &[
                ("DATA_ENCRYPTION_KEYS", &format!("2:{K2},1:{K1}")),
                ("SSN_HASH_KEYS", &format!("\n 7:{K3}\n 1:{K1}\n")),
            ],
        )
        .unwrap();
        assert_eq!(k.data.exposed(), [(2, [2u8; 32]), (1, [1u8; 32])]);
        assert_eq!(k.data.get(1).map(|k| k.expose_secret().0), Some([1u8; 32]));
        assert_eq!(k.data.ids().collect::<Vec<_>>(), [2, 1]);
        assert_eq!(
            k.ssn_hash.exposed(),
            [(7, vec![3u8; 32]), (1, vec![1u8; 32])]
        );
        // The single form is key 1.
        let k = keys(None, &[("DATA_ENCRYPTION_KEY", K1), ("SSN_HASH_KEY", K2)]).unwrap();
        assert_eq!(k.data.ids().collect::<Vec<_>>(), [1]);
        assert!(!format!("{k:?}").contains("AQEB") && !format!("{k:?}").contains("1, 1"));
    }

    #[test]
    fn malformed_rings_are_refused_naming_the_entry_never_the_key() {
        let hash = ("SSN_HASH_KEY", K3);
        for (ring, expect) in [
            (K1.to_owned(), "entry 1 is not ID:BASE64"),
            (
                format!("0:{K1}"),
                "entry 1 has key id 0, but ids start at 1 (a whole number from 1 to 4294967295)",
            ),
            (format!("x:{K1}"), "entry 1 has no key id"),
            (
                format!("4294967296:{K1}"),
                "entry 1 has key id 4294967296, out of range: ids are 1 to 4294967295",
            ),
            (
                format!("2:{K2},99999999999999999999999:{K1}"),
                "entry 2 has key id 99999999999999999999999, out of range",
            ),
            (format!("1:{K1},1:{K2}"), "key id 1 appears twice"),
            (format!("1:{K1},2:{K1}"), "are the same key"),
            (
                "1:AQID".to_owned(),
                "DATA_ENCRYPTION_KEYS key 1 must decode to exactly 32 bytes",
            ),
            (
                "1:not base64!".to_owned(),
                "DATA_ENCRYPTION_KEYS key 1 must be base64",
            ),
            (" , ".to_owned(), "DATA_ENCRYPTION_KEYS is empty"),
        ] {
            let e = err(Some("production"), &[("DATA_ENCRYPTION_KEYS", &ring), hash]);
            assert!(e.contains(expect), "{ring}: {e}");
            assert!(!e.contains("AQEB") && !e.contains("AgIC"), "{e}");
        }
        let e = err(
            None,
            &[
                ("DATA_ENCRYPTION_KEYS", &format!("1:{K1}")),
                ("DATA_ENCRYPTION_KEY", K1),
                hash,
            ],
        );
        assert!(e.contains("not both"), "{e}");
        let e = err(
            None,
            &[("DATA_ENCRYPTION_KEY", K1), ("SSN_HASH_KEY", "AQID")],
        );
        assert!(
            e.contains("SSN_HASH_KEY must decode to at least 32 bytes"),
            "{e}"
        );
    }
}
