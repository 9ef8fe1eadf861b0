//! How an arbitrary lock name becomes a file name and a PostgreSQL advisory key.
//!
//! Both mappings are pure functions of the name's UTF-8 bytes, specified here, so that every
//! process, crate version and language computes the same lock for the same name.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
