//! What a lock is called ([`LockKey`]: a string name, or an integer advisory key), and how a
//! key becomes a file name and a PostgreSQL advisory key.
//!
//! Every mapping is a pure function of the key (a name's UTF-8 bytes), specified here, so that
//! every process, crate version and language computes the same lock for the same key.

use sha2::{Digest, Sha256};
use std::fmt::{self, Write as _};

/// What a distributed lock is called: a string name, or an integer key of PostgreSQL's
/// advisory-lock functions, so that a program shares locks with SQL (or another language)
/// that already takes advisory locks by number.
///
/// Every method of [`LockClient`](super::LockClient) that takes a lock by name takes anything
/// that converts into a key: `&str` and `&String` (names), `i64` and `i32` (the one-argument
/// form, `pg_advisory_lock(bigint)`) and `(i32, i32)` (the two-argument form,
/// `pg_advisory_lock(int, int)`).
///
/// The three kinds never collide with one another on either backend:
///
/// - **PostgreSQL:** [`LockKey::Int`]`(k)` is the advisory lock `k` itself, the one
///   `SELECT pg_advisory_lock(k)` takes; [`LockKey::Pair`]`(a, b)` is the one
///   `pg_advisory_lock(a, b)` takes (PostgreSQL keeps the two forms apart: `(0, 42)` is not
///   `42`). A name is the `bigint` key derived from its SHA-256 (see
///   [the module docs](super#names)): a name and an integer key can meet only if the integer
///   was chosen to equal the name's hash, and then they exclude each other, which is safe.
/// - **File:** names, integer keys and pairs get lock files of distinct forms
///   (`n-<name>.lock`, `i-<k>.lock`, `p-<a>_<b>.lock`).
///
/// Fencing tokens, timeouts and the lost signal work for integer keys as for names.
///
/// # Examples
///
/// ```
/// use chainlock::distributed::LockKey;
///
/// assert_eq!(LockKey::from("orders"), LockKey::Name("orders"));
/// assert_eq!(LockKey::from(42_i64), LockKey::Int(42));
/// assert_eq!(LockKey::from(42), LockKey::Int(42), "an i32 is the same bigint key, as in SQL");
/// assert_eq!(LockKey::from((7, 42)), LockKey::Pair(7, 42));
/// assert_eq!(LockKey::Pair(7, 42).to_string(), "advisory(7, 42)");
/// ```
///
/// Sharing a lock with SQL:
///
/// ```no_run
/// # #[tokio::main]
/// # async fn main() -> Result<(), chainlock::distributed::Error> {
/// let locks = chainlock::distributed::LockClient::postgres("postgres://locks@db.internal/app").await?;
/// // Excludes `SELECT pg_advisory_lock(42)` run by any other session, and vice versa.
/// let guard = locks.lock(42).await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
/// Keys are ordered (for [`LockClient::lock_all`](super::LockClient::lock_all)): names first,
/// by their bytes, then `bigint` keys by value, then pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LockKey<'a> {
    /// A name: any string.
    Name(&'a str),
    /// A one-argument advisory key (`pg_advisory_lock(bigint)`).
    Int(i64),
    /// A two-argument advisory key (`pg_advisory_lock(int, int)`).
    Pair(i32, i32),
}

impl<'a> From<&'a str> for LockKey<'a> {
    fn from(name: &'a str) -> Self {
        Self::Name(name)
    }
}

impl<'a> From<&'a String> for LockKey<'a> {
    fn from(name: &'a String) -> Self {
        Self::Name(name)
    }
}

impl<'a> From<&&'a str> for LockKey<'a> {
    fn from(name: &&'a str) -> Self {
        Self::Name(name)
    }
}

impl From<i64> for LockKey<'_> {
    fn from(key: i64) -> Self {
        Self::Int(key)
    }
}

impl From<&i64> for LockKey<'_> {
    fn from(key: &i64) -> Self {
        Self::Int(*key)
    }
}

impl From<&(i32, i32)> for LockKey<'_> {
    fn from(&(high, low): &(i32, i32)) -> Self {
        Self::Pair(high, low)
    }
}

impl From<&i32> for LockKey<'_> {
    fn from(key: &i32) -> Self {
        Self::Int(i64::from(*key))
    }
}

/// The `bigint` key `key` (as SQL widens `pg_advisory_lock(42)`'s `int` argument).
impl From<i32> for LockKey<'_> {
    fn from(key: i32) -> Self {
        Self::Int(i64::from(key))
    }
}

impl From<(i32, i32)> for LockKey<'_> {
    fn from((high, low): (i32, i32)) -> Self {
        Self::Pair(high, low)
    }
}

/// A [`LockKey`] that owns its name (what a guard keeps).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum OwnedKey {
    Name(Box<str>),
    Int(i64),
    Pair(i32, i32),
}

impl OwnedKey {
    pub(crate) fn as_key(&self) -> LockKey<'_> {
        match self {
            Self::Name(name) => LockKey::Name(name),
            Self::Int(key) => LockKey::Int(*key),
            Self::Pair(high, low) => LockKey::Pair(*high, *low),
        }
    }
}

impl From<LockKey<'_>> for OwnedKey {
    fn from(key: LockKey<'_>) -> Self {
        match key {
            LockKey::Name(name) => Self::Name(name.into()),
            LockKey::Int(key) => Self::Int(key),
            LockKey::Pair(high, low) => Self::Pair(high, low),
        }
    }
}

/// A name as itself; an integer key as `advisory(42)` or `advisory(7, 42)`.
impl fmt::Display for LockKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Int(key) => write!(f, "advisory({key})"),
            Self::Pair(high, low) => write!(f, "advisory({high}, {low})"),
        }
    }
}

/// The file name (no directory part) of the lock file of `key`: [`file_name`] for a name,
/// `i-<key>.lock` and `p-<high>_<low>.lock` (decimal, `-` for a negative sign) for integer
/// keys. Names' files all start with `n-`, so the three forms never collide.
pub(crate) fn key_file_name(key: LockKey<'_>) -> String {
    match key {
        LockKey::Name(name) => file_name(name),
        LockKey::Int(key) => format!("i-{key}.lock"),
        LockKey::Pair(high, low) => format!("p-{high}_{low}.lock"),
    }
}

/// Encoded names up to this length are used verbatim (injective); longer ones are cut and
/// suffixed with their SHA-256, which keeps every file name far below the usual 255-byte limit.
const MAX_VERBATIM: usize = 120;
/// How much of a long name's encoding is kept in front of its hash (for humans reading `ls`).
const LONG_PREFIX: usize = 64;

/// The file name (no directory part) of the lock file of `name`.
///
/// Every byte outside `[A-Za-z0-9_-]` is percent-encoded (`/`, `.`, `\`, NUL, `%`, `~` and
/// every non-ASCII byte included), so the result can never be `.`, `..`, contain a separator or
/// a reserved character. Short encodings are used as is: `n-<encoding>.lock`, an injective
/// mapping. Longer ones become `n-<first 64 bytes>~<hex SHA-256 of the name>.lock`; `~` never
/// occurs in an encoding, so the two forms never collide with each other.
pub(crate) fn file_name(name: &str) -> String {
    let mut encoded = String::with_capacity(name.len().min(MAX_VERBATIM + 3));
    for &byte in name.as_bytes() {
        if encoded.len() > MAX_VERBATIM {
            break;
        }
        if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' {
            encoded.push(char::from(byte));
        } else {
            write!(encoded, "%{byte:02X}").expect("writing to a String cannot fail");
        }
    }
    if encoded.len() <= MAX_VERBATIM {
        return format!("n-{encoded}.lock");
    }
    let mut cut = LONG_PREFIX;
    // Never cut an escape `%XY` in two.
    if let Some(percent) = encoded[..cut].rfind('%')
        && percent + 3 > cut
    {
        cut = percent;
    }
    let digest = Sha256::digest(name.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in &digest {
        write!(hex, "{byte:02x}").expect("writing to a String cannot fail");
    }
    format!("n-{}~{hex}.lock", &encoded[..cut])
}

/// The PostgreSQL advisory lock key of `name`: the first 8 bytes of the SHA-256 of its UTF-8
/// bytes, read as a big-endian `i64`. In SQL:
/// `('x' || left(encode(sha256(convert_to(name, 'UTF8')), 'hex'), 16))::bit(64)::bigint`.
///
/// Two names whose keys collide (odds about 2⁻⁶⁴ per pair) share one lock: they exclude each
/// other, which is safe, never unsafe.
#[cfg(feature = "postgres")]
pub(crate) fn advisory_key(name: &str) -> i64 {
    let digest = Sha256::digest(name.as_bytes());
    let mut first = [0_u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// The PostgreSQL advisory lock key of the election of `name`: as [`advisory_key`], of the
/// bytes `0xFF`, `election:` and the name's UTF-8 bytes. No name's UTF-8 starts with `0xFF`,
/// so no lock name's key is an election's but by a SHA-256 collision: election keys are a
/// space of their own.
#[cfg(feature = "postgres")]
pub(crate) fn election_key(name: &str) -> i64 {
    let mut hasher = Sha256::new();
    hasher.update([0xFF]);
    hasher.update(b"election:");
    hasher.update(name.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0_u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// A PostgreSQL advisory lock: the `bigint` form (names and [`LockKey::Int`]) or the
/// two-`int` form ([`LockKey::Pair`]), which PostgreSQL keeps apart.
#[cfg(feature = "postgres")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Advisory {
    /// `pg_advisory_lock(bigint)`.
    Int(i64),
    /// `pg_advisory_lock(int, int)`.
    Pair(i32, i32),
}

#[cfg(feature = "postgres")]
impl From<LockKey<'_>> for Advisory {
    fn from(key: LockKey<'_>) -> Self {
        match key {
            LockKey::Name(name) => Self::Int(advisory_key(name)),
            LockKey::Int(key) => Self::Int(key),
            LockKey::Pair(high, low) => Self::Pair(high, low),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_keys_have_files_of_their_own() {
        assert_eq!(key_file_name(LockKey::Int(42)), "i-42.lock");
        assert_eq!(key_file_name(LockKey::Int(-42)), "i--42.lock");
        assert_eq!(key_file_name(LockKey::Pair(-1, 42)), "p--1_42.lock");
        assert_eq!(key_file_name(LockKey::Name("42")), "n-42.lock");
        let files = [
            key_file_name(LockKey::Int(42)),
            key_file_name(LockKey::Pair(0, 42)),
            key_file_name(LockKey::Name("42")),
            key_file_name(LockKey::Name("i-42")),
        ];
        for (i, a) in files.iter().enumerate() {
            for b in &files[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn short_names_are_encoded_verbatim_and_safely() {
        assert_eq!(file_name("orders"), "n-orders.lock");
        assert_eq!(file_name(""), "n-.lock");
        assert_eq!(file_name(".."), "n-%2E%2E.lock");
        assert_eq!(file_name("a/b"), "n-a%2Fb.lock");
        assert_eq!(file_name("a\0b"), "n-a%00b.lock");
        assert_eq!(file_name("é"), "n-%C3%A9.lock");
        assert_ne!(file_name("a/b"), file_name("a%2Fb"));
    }

    #[test]
    fn long_names_are_hashed_and_bounded() {
        let long = "x".repeat(1 << 20);
        let other = format!("{}y", "x".repeat((1 << 20) - 1));
        let (a, b) = (file_name(&long), file_name(&other));
        assert_ne!(a, b);
        assert!(a.len() < 160, "{}", a.len());
        assert!(a.contains('~'));
        // A long name of escapes is never cut inside an escape.
        let slashes = file_name(&"/".repeat(500));
        let prefix = slashes.split('~').next().unwrap();
        assert!(prefix.ends_with("%2F"), "{prefix}");
    }

    #[test]
    fn names_just_over_the_verbatim_limit_are_hashed() {
        let at = "a".repeat(MAX_VERBATIM);
        let over = "a".repeat(MAX_VERBATIM + 1);
        assert_eq!(file_name(&at), format!("n-{at}.lock"));
        assert!(file_name(&over).contains('~'));
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn advisory_key_is_the_documented_sha256_prefix() {
        // SHA-256("") = e3b0c44298fc1c14...
        assert_eq!(
            advisory_key(""),
            i64::from_be_bytes([0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14])
        );
        assert_ne!(advisory_key("a"), advisory_key("b"));
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn election_keys_are_apart_from_lock_keys() {
        assert_ne!(election_key("a"), advisory_key("a"));
        assert_ne!(election_key("a"), advisory_key("election:a"));
        assert_ne!(election_key("a"), advisory_key("\u{ff}election:a"));
        assert_ne!(election_key("a"), election_key("b"));
    }
}
