//! The options of the PostgreSQL backend, and every bound derived from them.

use super::super::Error;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;
use tokio_postgres::Config;

/// Options of the PostgreSQL backend (see [`LockClient::postgres_with`](crate::distributed::LockClient::postgres_with)).
///
/// Every bound the backend keeps derives from three durations; with the defaults:
///
/// | what | bound | default |
/// | --- | --- | --- |
/// | opening a session (connect, start-up, authentication, set-up) | `connect_timeout` | 10 s |
/// | `try_acquire` | `heartbeat_timeout` | 2 s |
/// | `acquire_timeout(t)` | `t + heartbeat_timeout` | t + 2 s |
/// | `release` | `heartbeat_timeout` | 2 s |
/// | a silent session is reported lost ([`is_lost`](crate::distributed::DistributedGuard::is_lost)) | `2 × (heartbeat_interval + heartbeat_timeout)` after the last confirmed contact | 6 s |
/// | the server may release the lock of a silent session (`idle_session_timeout`) | `3 × (heartbeat_interval + heartbeat_timeout)` after it | 9 s |
///
/// # Examples
///
/// ```
/// use chainlock::distributed::PostgresOptions;
/// use std::time::Duration;
///
/// let options = PostgresOptions::new("postgres://locks@db.internal/app?connect_timeout=5")?
///     .max_idle_connections(4)
///     .heartbeat_interval(Duration::from_millis(500));
/// assert_eq!(options.loss_after(), Duration::from_secs(5));
/// # Ok::<(), chainlock::distributed::Error>(())
/// ```
#[derive(Clone)]
pub struct PostgresOptions {
    pub(super) config: Config,
    pub(super) max_idle: usize,
    pub(super) heartbeat_interval: Duration,
    pub(super) heartbeat_timeout: Duration,
}

impl fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("hosts", &self.config.get_hosts())
            .field("connect_timeout", &self.connect_timeout())
            .field("max_idle", &self.max_idle)
            .field("heartbeat_interval", &self.heartbeat_interval)
            .field("heartbeat_timeout", &self.heartbeat_timeout)
            .finish_non_exhaustive()
    }
}

/// `tokio_postgres`'s default `keepalives_idle`: a caller who kept it gets ours.
const DEFAULT_KEEPALIVES_IDLE: Duration = Duration::from_hours(2);
/// Opening a session takes at most this long unless the URL says otherwise.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl PostgresOptions {
    /// Options for the server at `url` (`postgres://user:password@host:port/db` or
    /// `host=... port=... user=...`); TLS is not supported (use a local socket, a tunnel or a
    /// private network).
    ///
    /// # Errors
    ///
    /// [`Error::Postgres`] if `url` does not parse.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::distributed::PostgresOptions;
    ///
    /// assert!(PostgresOptions::new("host=/run/postgresql user=locks dbname=app").is_ok());
    /// assert!(PostgresOptions::new("postgres://[not a url").is_err());
    /// ```
    pub fn new(url: &str) -> Result<Self, Error> {
        Ok(Self::from_config(Config::from_str(url)?))
    }

    /// Options for a connection configured with `tokio_postgres`'s [`Config`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::distributed::PostgresOptions;
    /// use std::time::Duration;
    ///
    /// let mut config = tokio_postgres::Config::new();
    /// config.host("db.internal").user("locks").dbname("app");
    /// config.connect_timeout(Duration::from_secs(3));
    /// let options = PostgresOptions::from_config(config);
    /// assert_eq!(options.connect_timeout(), Duration::from_secs(3));
    /// ```
    #[must_use]
    pub fn from_config(mut config: Config) -> Self {
        // Without these, a partitioned network leaves a connect or an unbounded lock wait
        // hanging until TCP gives up (hours with the defaults). Values set by the caller win.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if config.get_keepalives_idle() == DEFAULT_KEEPALIVES_IDLE {
            config.keepalives_idle(Duration::from_secs(10));
            config.keepalives_interval(Duration::from_secs(2));
            config.keepalives_retries(3);
        }
        Self {
            config,
            max_idle: 16,
            heartbeat_interval: Duration::from_secs(1),
            heartbeat_timeout: Duration::from_secs(2),
        }
    }

    /// How many idle (unlocked) connections the client keeps for later acquisitions
    /// (default 16). Zero connects once per acquisition.
    ///
    /// # Examples
    ///
    /// ```
    /// # let url = "postgres://locks@db.internal/app";
    /// let options = chainlock::distributed::PostgresOptions::new(url)?.max_idle_connections(0);
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn max_idle_connections(mut self, max: usize) -> Self {
        self.max_idle = max;
        self
    }

    /// How often a connection not waiting for a lock proves it is alive (default 1 s).
    ///
    /// A closed connection is reported lost at once; a silent one (a paused process, a
    /// partition, a hung server) [`loss_after`](Self::loss_after) its last confirmed contact.
    ///
    /// # Panics
    ///
    /// Panics if `interval` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # let url = "postgres://locks@db.internal/app";
    /// let options = chainlock::distributed::PostgresOptions::new(url)?
    ///     .heartbeat_interval(Duration::from_millis(200));
    /// assert_eq!(options.loss_after(), Duration::from_millis(4400));
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    #[track_caller]
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        assert!(!interval.is_zero(), "heartbeat interval must not be zero");
        self.heartbeat_interval = interval;
        self
    }

    /// How long a heartbeat (or any statement that does not wait for a lock, and a release)
    /// may go unanswered (default 2 s): the connection is then closed and reported lost.
    ///
    /// # Panics
    ///
    /// Panics if `timeout` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # let url = "postgres://locks@db.internal/app";
    /// let options = chainlock::distributed::PostgresOptions::new(url)?
    ///     .heartbeat_timeout(Duration::from_millis(500));
    /// assert_eq!(options.loss_after(), Duration::from_secs(3));
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    #[track_caller]
    pub fn heartbeat_timeout(mut self, timeout: Duration) -> Self {
        assert!(!timeout.is_zero(), "heartbeat timeout must not be zero");
        self.heartbeat_timeout = timeout;
        self
    }

    /// How long opening a session may take at most: TCP connect, start-up, authentication,
    /// session set-up and preparing statements, together. The URL's `connect_timeout`
    /// (default 10 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = chainlock::distributed::PostgresOptions::new(
    ///     "postgres://locks@db.internal/app?connect_timeout=2",
    /// )?;
    /// assert_eq!(options.connect_timeout(), Duration::from_secs(2));
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn connect_timeout(&self) -> Duration {
        self.config
            .get_connect_timeout()
            .copied()
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }

    /// How long after its last confirmed contact with the server a held lock is reported lost
    /// although nothing was heard of a failure: `2 × (heartbeat_interval + heartbeat_timeout)`
    /// (6 s by default).
    ///
    /// A contact counts from the instant its request was *sent*, and the server is told to end
    /// a session idle for [`server_release_after`](Self::server_release_after) (PostgreSQL's
    /// `idle_session_timeout`), which is `heartbeat_interval + heartbeat_timeout` longer: so a
    /// guard of a paused, frozen or partitioned process says it is lost before the server
    /// can hand its lock to someone else, whether or not any of its tasks could run.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # let url = "postgres://locks@db.internal/app";
    /// let options = chainlock::distributed::PostgresOptions::new(url)?;
    /// assert_eq!(options.loss_after(), Duration::from_secs(6));
    /// assert!(options.loss_after() < options.server_release_after());
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn loss_after(&self) -> Duration {
        2 * self.cycle()
    }

    /// After how long without a word from the client the server ends its session, releasing
    /// its lock: `3 × (heartbeat_interval + heartbeat_timeout)` (9 s by default), set as the
    /// session's `idle_session_timeout`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # let url = "postgres://locks@db.internal/app";
    /// let options = chainlock::distributed::PostgresOptions::new(url)?;
    /// assert_eq!(options.server_release_after(), Duration::from_secs(9));
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn server_release_after(&self) -> Duration {
        3 * self.cycle()
    }

    /// One heartbeat: the wait before it plus the longest it may take.
    fn cycle(&self) -> Duration {
        self.heartbeat_interval
            .saturating_add(self.heartbeat_timeout)
    }
}
