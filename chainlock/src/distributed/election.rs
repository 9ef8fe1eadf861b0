//! Leader election on every backend: campaign for a name with a value, lead with a fencing
//! token and a loss signal, proclaim, resign; observe the leader without campaigning.
//!
//! One shape for every backend, built on the seam (`backend.rs`: [`Backend::campaign`],
//! [`Backend::leader`], [`Backend::observe`]); each backend elects with its own means (the
//! guide's "Leader election" section says how, and where they differ):
//!
//! - **etcd**: etcd's own algorithm and keys (Go's `concurrency.Election`, `etcdctl elect`).
//! - **PostgreSQL**: an advisory lock in a key space of its own and a leader record.
//! - **File**: a lock file and a leader file; failover on process death only.

use super::backend::{Leading, Wait};
use super::{Error, FencingToken, LockClient, runtime};
use std::fmt;
use std::time::{Duration, Instant};

pub(crate) mod leader;
mod observe;

pub use leader::Leader;
pub use observe::LeaderWatch;

/// The leadership of a name won by [`LockClient::campaign`]: proof that this candidacy leads,
/// with its fencing token and its loss signal. Resigns when dropped.
///
/// Pass [`token`](Self::token) with every write the leader makes, and stop acting once
/// [`is_lost`](Self::is_lost) says so (or [`lost`](Self::lost) completes): the guide's
/// "Leader election" section says how long a leader may act after a missed keep-alive.
///
/// **Dropping** resigns without reporting and without waiting for the network: the file
/// backend removes its leader file and unlocks at once; etcd deletes the candidacy's key on a
/// background task of the client's runtime (the next candidate leads when the delete lands,
/// or at the latest when the client's lease expires, if the delete fails); PostgreSQL clears
/// its record and unlocks on a background task (or the server unlocks when the connection
/// closes). [`resign`](Self::resign) waits for it and reports failures.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), chainlock::distributed::Error> {
/// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
/// let client = chainlock::distributed::LockClient::file(&dir)?;
/// let leadership = client.campaign("compactor", "10.0.0.7:8080").await?;
/// let leader = client.leader("compactor").await?.expect("we lead");
/// assert_eq!(leader.token(), leadership.token());
/// assert_eq!(leader.value(), b"10.0.0.7:8080");
/// leadership.resign().await?;
/// assert_eq!(client.leader("compactor").await?, None);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(()) }
/// ```
#[must_use = "if unused the leadership is resigned at once"]
#[clippy::has_significant_drop]
pub struct Leadership {
    name: Box<str>,
    /// `None` only after an explicit resignation took it.
    held: Option<Box<dyn Leading>>,
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name: String = self.name.chars().take(64).collect();
        f.debug_struct("Leadership")
            .field("name", &name)
            .field("token", &self.token())
            .field("lost", &self.is_lost())
            .finish_non_exhaustive()
    }
}

impl Leadership {
    fn held(&self) -> &dyn Leading {
        self.held
            .as_deref()
            .expect("a live leadership holds its candidacy")
    }

    /// The name this leadership is of.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.blocking_campaign("scheduler", "me")?;
    /// assert_eq!(leadership.name(), "scheduler");
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fencing token of this leadership: greater than the token of every earlier leader of
    /// the name. The same number [`Leader::token`] shows observers.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let first = client.blocking_campaign("scheduler", "a")?.token();
    /// let second = client.blocking_campaign("scheduler", "b")?.token();
    /// assert!(second > first);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn token(&self) -> FencingToken {
        self.held().token()
    }

    /// Whether this leadership is known to be lost (another candidacy may lead now). Once
    /// `true`, it stays `true`. Judged as a lock's loss
    /// ([`DistributedGuard::is_lost`](super::DistributedGuard::is_lost)): on the clock for etcd
    /// and PostgreSQL, never for the file backend (a paused leader keeps leading there); etcd
    /// also when a [`proclaim`](Self::proclaim) finds the candidacy's key gone.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.blocking_campaign("scheduler", "me")?;
    /// assert!(!leadership.is_lost(), "file leaderships end only with the process");
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.held().is_lost()
    }

    /// Completes when this leadership is lost (see [`is_lost`](Self::is_lost)); never
    /// completes for the file backend. Race it against the leader's work to stop that work.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn compact(token: chainlock::distributed::FencingToken) {}
    /// # async fn demo(client: chainlock::distributed::LockClient) -> Result<(), chainlock::distributed::Error> {
    /// let leadership = client.campaign("compactor", "10.0.0.7").await?;
    /// tokio::select! {
    ///     () = compact(leadership.token()) => leadership.resign().await?,
    ///     () = leadership.lost() => eprintln!("no longer the leader: stopped compacting"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) {
        self.held().lost().await;
    }

    /// Changes the value observers see ([`Leader::value`]) while this candidacy leads.
    ///
    /// # Errors
    ///
    /// [`Error::Lost`] once the leadership is lost (at once, without asking the backend, if
    /// [`is_lost`](Self::is_lost) says so; etcd: also if the candidacy's key is gone); the
    /// backend's errors otherwise ([`Error::Io`], [`Error::Postgres`], [`Error::Unresponsive`],
    /// `Error::Etcd`, `Error::EtcdUnresponsive`).
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe in the sense that a cancelled proclamation may or may not have changed
    /// the value; the leadership is unaffected.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.campaign("scheduler", "starting").await?;
    /// leadership.proclaim("serving on :8080").await?;
    /// let leader = client.leader("scheduler").await?.expect("we lead");
    /// assert_eq!(leader.value(), b"serving on :8080");
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn proclaim(&self, value: impl AsRef<[u8]>) -> Result<(), Error> {
        let held = self.held();
        if held.is_lost() {
            return Err(Error::Lost);
        }
        held.proclaim(value.as_ref()).await
    }

    /// Blocking [`Leadership::proclaim`].
    ///
    /// # Errors
    ///
    /// As [`Leadership::proclaim`].
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.blocking_campaign("scheduler", "starting")?;
    /// leadership.blocking_proclaim("serving")?;
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_proclaim(&self, value: impl AsRef<[u8]>) -> Result<(), Error> {
        runtime::block_on(self.proclaim(value))
    }

    /// Resigns: the next candidate may lead once this returns `Ok` (etcd: the candidacy's key
    /// is deleted; PostgreSQL: the record cleared and the advisory lock released; file: the
    /// leader file removed and the lock released).
    ///
    /// # Errors
    ///
    /// [`Error::Lost`] if the leadership had been lost before; the backend's errors otherwise
    /// (the leadership then ends anyway: with the etcd lease, the PostgreSQL connection, the
    /// file).
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe in the sense that the outcome is unknown when the future is dropped;
    /// the candidacy is withdrawn either way, as by a drop.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.campaign("scheduler", "me").await?;
    /// leadership.resign().await?;
    /// assert!(client.try_campaign("scheduler", "you").await?.is_some(), "free after a resignation");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn resign(mut self) -> Result<(), Error> {
        self.held
            .take()
            .expect("a live leadership holds its candidacy")
            .release()
            .await
    }

    /// Blocking [`Leadership::resign`].
    ///
    /// # Errors
    ///
    /// As [`Leadership::resign`].
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// client.blocking_campaign("scheduler", "me")?.blocking_resign()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_resign(self) -> Result<(), Error> {
        runtime::block_on(self.resign())
    }
}

/// Leader election: campaign, the leader now, its changes.
///
/// | wait | campaign |
/// |---|---|
/// | as long as it takes | [`campaign`](Self::campaign) |
/// | not at all | [`try_campaign`](Self::try_campaign) |
/// | at most a `Duration` | [`try_campaign_for`](Self::try_campaign_for) |
/// | until an `Instant` | [`try_campaign_until`](Self::try_campaign_until) |
///
/// and, without campaigning, [`leader`](Self::leader) (now) and [`observe`](Self::observe)
/// (every change); each with its `blocking_` twin.
impl LockClient {
    /// The one campaign every form goes through.
    async fn campaign_in(
        &self,
        name: &str,
        value: &[u8],
        wait: Wait,
    ) -> Result<Option<Leadership>, Error> {
        let held = self.backend.campaign(name, value, wait).await?;
        Ok(held.map(|held| Leadership {
            name: name.into(),
            held: Some(held),
        }))
    }

    /// Campaigns for the leadership of `name` with `value` (what observers see as
    /// [`Leader::value`]), waiting as long as it takes: candidates lead one at a time, in the
    /// order they campaigned (etcd, PostgreSQL; the file backend in the kernel's order).
    ///
    /// Election names are a space of their own on PostgreSQL and the file backend (a lock of
    /// `name` and an election of `name` never meet); on etcd an election of `name` uses the
    /// keys of `etcdctl elect name` and Go's `concurrency.Election`, which share the range of
    /// the lock of `name` (as in Go), and nest as etcd's locks do: a candidacy for `a/b` (its
    /// key `a/b/<lease>` lies in `a`'s range) makes a campaign for `a` wait and is what
    /// [`leader`](Self::leader)`("a")` reports, and a lock of `a` held elsewhere is reported as
    /// `a`'s leader with an empty value. On etcd, use names that are neither lock names nor
    /// prefixes of other names followed by `/`.
    ///
    /// # Errors
    ///
    /// The backend's errors, as [`LockClient::lock`]; the candidacy is then withdrawn.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future before it completes leaves no candidacy behind (etcd:
    /// its key is deleted on a background task; a leadership won while the future was dropped
    /// is resigned).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.campaign("compactor", "10.0.0.7").await?;
    /// // ... compact, passing `leadership.token()` with every write ...
    /// leadership.resign().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn campaign(&self, name: &str, value: impl AsRef<[u8]>) -> Result<Leadership, Error> {
        let leadership = self
            .campaign_in(name, value.as_ref(), Wait::Forever)
            .await?;
        Ok(leadership.expect("an unbounded campaign ends leading"))
    }

    /// Campaigns for `name` if no candidacy leads it now; `Ok(None)` if one does (of anyone,
    /// this client included). A candidacy that does not lead is withdrawn before this returns.
    ///
    /// # Errors
    ///
    /// As [`LockClient::campaign`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockClient::campaign`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.try_campaign("compactor", "a").await?.expect("nobody leads");
    /// assert!(client.try_campaign("compactor", "b").await?.is_none(), "`a` leads");
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_campaign(
        &self,
        name: &str,
        value: impl AsRef<[u8]>,
    ) -> Result<Option<Leadership>, Error> {
        self.campaign_in(name, value.as_ref(), Wait::Never).await
    }

    /// Campaigns for `name`, waiting at most `timeout`; `Ok(None)` if another candidacy still
    /// leads then (this one is withdrawn). A zero timeout is [`LockClient::try_campaign`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::campaign`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockClient::campaign`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// use std::time::Duration;
    /// let leadership = client.campaign("compactor", "a").await?;
    /// let late = client.try_campaign_for("compactor", "b", Duration::from_millis(10)).await?;
    /// assert!(late.is_none(), "`a` still leads after 10 ms");
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_campaign_for(
        &self,
        name: &str,
        value: impl AsRef<[u8]>,
        timeout: Duration,
    ) -> Result<Option<Leadership>, Error> {
        self.campaign_in(name, value.as_ref(), Wait::at_most(timeout))
            .await
    }

    /// Campaigns for `name`, waiting until `deadline` at most; `Ok(None)` if another candidacy
    /// still leads then. A deadline already passed is [`LockClient::try_campaign`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::campaign`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockClient::campaign`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// use std::time::{Duration, Instant};
    /// let leadership = client.campaign("compactor", "a").await?;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// assert!(client.try_campaign_until("compactor", "b", deadline).await?.is_none());
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_campaign_until(
        &self,
        name: &str,
        value: impl AsRef<[u8]>,
        deadline: Instant,
    ) -> Result<Option<Leadership>, Error> {
        self.campaign_in(name, value.as_ref(), Wait::until(deadline))
            .await
    }

    /// Blocking [`LockClient::campaign`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::campaign`].
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.blocking_campaign("compactor", "10.0.0.7")?;
    /// leadership.blocking_resign()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_campaign(
        &self,
        name: &str,
        value: impl AsRef<[u8]>,
    ) -> Result<Leadership, Error> {
        runtime::block_on(self.campaign(name, value))
    }

    /// Blocking [`LockClient::try_campaign`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::campaign`].
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.blocking_try_campaign("compactor", "a")?.expect("nobody leads");
    /// assert!(client.blocking_try_campaign("compactor", "b")?.is_none());
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_campaign(
        &self,
        name: &str,
        value: impl AsRef<[u8]>,
    ) -> Result<Option<Leadership>, Error> {
        runtime::block_on(self.try_campaign(name, value))
    }

    /// Blocking [`LockClient::try_campaign_for`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::campaign`].
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// use std::time::Duration;
    /// let leadership = client.blocking_campaign("compactor", "a")?;
    /// assert!(client.blocking_try_campaign_for("compactor", "b", Duration::from_millis(10))?.is_none());
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_campaign_for(
        &self,
        name: &str,
        value: impl AsRef<[u8]>,
        timeout: Duration,
    ) -> Result<Option<Leadership>, Error> {
        runtime::block_on(self.try_campaign_for(name, value, timeout))
    }

    /// Blocking [`LockClient::try_campaign_until`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::campaign`].
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// use std::time::{Duration, Instant};
    /// let leadership = client.blocking_campaign("compactor", "a")?;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// assert!(client.blocking_try_campaign_until("compactor", "b", deadline)?.is_none());
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_campaign_until(
        &self,
        name: &str,
        value: impl AsRef<[u8]>,
        deadline: Instant,
    ) -> Result<Option<Leadership>, Error> {
        runtime::block_on(self.try_campaign_until(name, value, deadline))
    }
}
