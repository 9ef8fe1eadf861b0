//! Observing an election without campaigning: [`LockClient::leader`], and [`LeaderWatch`]
//! from [`LockClient::observe`] (latest value, never an older leader after a newer one), fed
//! by the observing task's [`Publisher`](super::leader::Publisher).

use super::super::backend::Backend;
use super::super::{Error, LockClient, runtime};
use super::leader::{Leader, Publisher};
use std::sync::Arc;
use tokio::sync::watch;

/// A stream of the leaders of a name ([`LockClient::observe`]), with the semantics of
/// [`tokio::sync::watch`]: it always holds the most recent leader seen (`None`: no leader),
/// keeps only that one (bounded memory, whatever the rate of changes), and never goes back
/// to an older leader after a newer one (by token). A slow reader skips the leaders it was
/// too slow to see, never the latest.
///
/// Cloning is cheap; each clone tracks which value it has seen. The observation runs on a
/// background task until the last clone is dropped; it retries on its own when the backend
/// fails (the latest value then stays until the backend answers again).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), chainlock::distributed::Error> {
/// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
/// let client = chainlock::distributed::LockClient::file(&dir)?;
/// let mut leaders = client.observe("scheduler").await?;
/// assert_eq!(leaders.current(), None);
/// let leadership = client.campaign("scheduler", "10.0.0.7").await?;
/// let leader = leaders.changed().await?.expect("a leader");
/// assert_eq!(leader.token(), leadership.token());
/// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct LeaderWatch {
    receiver: watch::Receiver<Option<Leader>>,
}

impl LeaderWatch {
    /// The most recent leader seen (`None`: no leader), marking it seen.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let _leadership = client.blocking_campaign("scheduler", "me")?;
    /// let mut leaders = client.blocking_observe("scheduler")?;
    /// assert_eq!(leaders.current().expect("a leader").value(), b"me");
    /// # drop(_leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn current(&mut self) -> Option<Leader> {
        self.receiver.borrow_and_update().clone()
    }

    /// Waits for a leader (or the absence of one) this watch has not seen yet, and returns it:
    /// the most recent one then.
    ///
    /// # Errors
    ///
    /// [`Error::Helper`] if the observing task stopped (it panicked, or its runtime shut
    /// down).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a change that arrives while the future is dropped is returned by the next
    /// call.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.campaign("scheduler", "a").await?;
    /// let mut leaders = client.observe("scheduler").await?;
    /// leadership.resign().await?;
    /// assert_eq!(leaders.changed().await?, None, "no leader after the resignation");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn changed(&mut self) -> Result<Option<Leader>, Error> {
        self.receiver
            .changed()
            .await
            .map_err(|_| Error::Helper("the observing task stopped".into()))?;
        Ok(self.current())
    }

    /// Blocking [`LeaderWatch::changed`].
    ///
    /// # Errors
    ///
    /// As [`LeaderWatch::changed`].
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
    /// let mut leaders = client.blocking_observe("scheduler")?;
    /// let leadership = client.blocking_campaign("scheduler", "me")?;
    /// assert_eq!(leaders.blocking_changed()?.map(|leader| leader.token()), Some(leadership.token()));
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_changed(&mut self) -> Result<Option<Leader>, Error> {
        runtime::block_on(self.changed())
    }
}

/// Observing, without campaigning: the leader now, and its changes.
impl LockClient {
    /// The leader of `name` now, without campaigning: the candidacy the backend holds now
    /// (`None`: none leads), never the record of a leader that died (etcd: a leader whose
    /// process died leads until its lease expires, as for etcd itself; on etcd the leader is
    /// the oldest key in `name`'s range, so a candidacy or a lock of a nested name `name/…`
    /// counts, as in Go: see [`campaign`](LockClient::campaign) on names).
    ///
    /// # Errors
    ///
    /// The backend's errors, as [`LockClient::lock`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe (it only reads).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// assert_eq!(client.leader("compactor").await?, None);
    /// let leadership = client.campaign("compactor", "10.0.0.7").await?;
    /// assert_eq!(client.leader("compactor").await?.expect("a leader").value(), b"10.0.0.7");
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn leader(&self, name: &str) -> Result<Option<Leader>, Error> {
        self.backend.leader(name).await
    }

    /// Blocking [`LockClient::leader`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::leader`].
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
    /// assert_eq!(client.blocking_leader("compactor")?, None);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_leader(&self, name: &str) -> Result<Option<Leader>, Error> {
        runtime::block_on(self.leader(name))
    }

    /// Observes the leaders of `name` without campaigning: a [`LeaderWatch`] holding the
    /// leader now, then every change (latest-value semantics, see [`LeaderWatch`]). etcd is
    /// told of changes by a watch (as `etcdctl elect -l`); PostgreSQL by `LISTEN`/`NOTIFY` on
    /// one of the client's connections (within its `max_connections`: the observation keeps
    /// that connection, which serves the client's other short statements but never waits on
    /// the server), reading the leader again at each notification and every second besides;
    /// the file backend asks again every 100 ms.
    ///
    /// The observation runs on a task of the Tokio runtime this is called in (outside one, and
    /// for the blocking twin: chainlock's background runtime) until the last clone of the
    /// watch is dropped; it keeps the client's backend (etcd: its connections) alive meanwhile.
    ///
    /// # Errors
    ///
    /// The backend's errors when reading the leader now, as [`LockClient::leader`]; later
    /// failures are retried by the task.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe (nothing is started before it completes).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let mut leaders = client.observe("compactor").await?;
    /// let leadership = client.campaign("compactor", "10.0.0.7").await?;
    /// while leaders.current().is_none() {
    ///     leaders.changed().await?;
    /// }
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn observe(&self, name: &str) -> Result<LeaderWatch, Error> {
        let now = self.backend.leader(name).await?;
        // The leader now is the watch's first value, seen already: `changed` waits for the
        // next.
        let (publisher, receiver) = Publisher::new(now);
        let backend: Arc<dyn Backend> = self.backend.clone();
        // The caller's runtime; polled outside one, chainlock's background runtime.
        let runtime =
            tokio::runtime::Handle::try_current().unwrap_or_else(|_| runtime::handle().clone());
        drop(runtime.spawn(backend.observe(name.to_owned(), publisher)));
        Ok(LeaderWatch { receiver })
    }

    /// Blocking [`LockClient::observe`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::observe`].
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
    /// let mut leaders = client.blocking_observe("compactor")?;
    /// assert_eq!(leaders.current(), None);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_observe(&self, name: &str) -> Result<LeaderWatch, Error> {
        runtime::block_on(self.observe(name))
    }
}
