//! Fencing tokens: proof of the order in which holders acquired a name.

use std::fmt;

/// A number handed out with every successful acquisition of a name, greater than every token
/// handed out earlier for that name.
///
/// Pass it along with every write to the storage the lock protects, and make the storage reject
/// a write whose token is lower than one it has already seen: a holder that was paused (GC,
/// swap, network) past the loss of its lock then cannot overwrite the work of the next holder
/// (Kleppmann, *How to do distributed locking*, 2016).
///
/// Tokens of one name increase strictly; they need not be consecutive (the PostgreSQL backend
/// draws them from one counter shared by all names, and moves it to a higher epoch after a
/// server crash).
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), chainlock::distributed::Error> {
/// # let dir = std::env::temp_dir().join(format!("chainlock-doc-fencing-{}", std::process::id()));
/// let locks = chainlock::distributed::LockClient::file(&dir)?;
/// let first = locks.blocking_lock("report")?;
/// let t1 = first.token();
/// drop(first);
/// let second = locks.blocking_lock("report")?;
/// assert!(second.token() > t1);
/// # drop(second); std::fs::remove_dir_all(&dir).ok();
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(u64);

impl FencingToken {
    pub(crate) const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The token as a number, to store beside the data it protects.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-get-{}", std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let guard = locks.blocking_lock("orders")?;
    /// let stored: u64 = guard.token().get(); // e.g. a column next to the row it fenced
    /// assert!(stored >= 1);
    /// # drop(guard); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<FencingToken> for u64 {
    fn from(token: FencingToken) -> Self {
        token.0
    }
}
