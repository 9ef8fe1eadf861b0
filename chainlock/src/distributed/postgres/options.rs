//! The options of the PostgreSQL backend, and every bound derived from them.

use super::super::Error;
use std::fmt;
use std::str::FromStr;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::{AsyncMessage, Client, Config, NoTls};

/// Options of the PostgreSQL backend (see [`LockClient::postgres_with`](crate::distributed::LockClient::postgres_with)).
///
/// Every bound the backend keeps derives from three durations; with the defaults:
///
/// | what | bound | default |
/// | --- | --- | --- |
/// | opening a session (connect, start-up, authentication, set-up) | `connect_timeout` | 10 s |
/// | `try_lock`, `try_lock_shared` (and every `try_` form without a wait) | `heartbeat_timeout` | 2 s |
/// | `try_lock_for(t)` and every timed form (`_for`, `_until`: t is the time left) | `t + heartbeat_timeout` | t + 2 s |
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
    pub(super) max_connections: usize,
    pub(super) heartbeat_interval: Duration,
    pub(super) heartbeat_timeout: Duration,
    /// `Some` once TLS was asked for: every session then uses it (`sslmode=require`).
    #[cfg(feature = "postgres-tls")]
    pub(super) tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
}

/// A session's connection (plain or TLS), polled by its driver for the server's messages.
pub(super) type Connection = Box<dyn Messages>;

/// A connection as its driver polls it: [`tokio_postgres::Connection::poll_message`] (which
/// also sends and receives the statements' messages), whatever its stream types.
pub(super) trait Messages: Send + 'static {
    /// The server's next asynchronous message (a notification, a notice); `None` or an
    /// error when the connection ended.
    fn poll_message(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<AsyncMessage, tokio_postgres::Error>>>;
}

impl<S, T> Messages for tokio_postgres::Connection<S, T>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    fn poll_message(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<AsyncMessage, tokio_postgres::Error>>> {
        tokio_postgres::Connection::poll_message(self, cx)
    }
}

impl fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("hosts", &self.config.get_hosts())
            .field("connect_timeout", &self.connect_timeout())
            .field("max_idle", &self.max_idle)
            .field("max_connections", &self.max_connections)
            .field("heartbeat_interval", &self.heartbeat_interval)
            .field("heartbeat_timeout", &self.heartbeat_timeout)
            .field("tls", &self.uses_tls())
            .finish_non_exhaustive()
    }
}

/// `tokio_postgres`'s default `keepalives_idle`: a caller who kept it gets ours.
const DEFAULT_KEEPALIVES_IDLE: Duration = Duration::from_hours(2);
/// Opening a session takes at most this long unless the URL says otherwise.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl PostgresOptions {
    /// Options for the server at `url` (`postgres://user:password@host:port/db` or
    /// `host=... port=... user=...`). Connections are plain text unless TLS is asked for
    /// ([`tls`](Self::tls) or [`tls_root_certificates`](Self::tls_root_certificates), feature
    /// `postgres-tls`): a URL's `sslmode=require` alone, without them, fails to connect.
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
            max_connections: 16,
            heartbeat_interval: Duration::from_secs(1),
            heartbeat_timeout: Duration::from_secs(2),
            #[cfg(feature = "postgres-tls")]
            tls: None,
        }
    }

    /// Connects with TLS (rustls), verifying the server's certificate and host name against
    /// the system's trust store (as libpq's `sslmode=verify-full sslrootcert=system`). Every
    /// session then requires TLS (`sslmode=require`, whatever the URL says): a server that
    /// does not offer it, or whose certificate does not verify, is refused with
    /// [`Error::Tls`] (nothing is sent in the clear).
    ///
    /// For a managed server whose CA is not in the system's store (most clouds sign with a CA
    /// of their own), use [`tls_root_certificates`](Self::tls_root_certificates).
    ///
    /// # Errors
    ///
    /// [`Error::Tls`] if the system's trust store has no usable certificate.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// use chainlock::distributed::{LockClient, PostgresOptions};
    ///
    /// let options = PostgresOptions::new("postgres://locks@db.example.com/app")?.tls()?;
    /// let locks = LockClient::postgres_with(options).await?;
    /// # drop(locks); Ok(()) }
    /// ```
    #[cfg(feature = "postgres-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres-tls")))]
    pub fn tls(self) -> Result<Self, Error> {
        let found = rustls_native_certs::load_native_certs();
        let mut roots = rustls::RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err(Error::Tls(format!(
                "no usable certificate in the system's trust store ({} errors)",
                found.errors.len()
            )));
        }
        self.tls_with_roots(roots)
    }

    /// Connects with TLS (rustls), verifying the server's certificate and host name against
    /// the CA certificates of the PEM file at `path` only (as libpq's `sslmode=verify-full
    /// sslrootcert=<path>`), for example the CA bundle of a managed PostgreSQL service, or
    /// your own CA. Otherwise as [`tls`](Self::tls).
    ///
    /// # Errors
    ///
    /// [`Error::Tls`] if the file cannot be read or holds no usable certificate.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// use chainlock::distributed::{LockClient, PostgresOptions};
    ///
    /// let options = PostgresOptions::new("postgres://locks@db.internal/app")?
    ///     .tls_root_certificates("/etc/myapp/db-ca.pem")?;
    /// let locks = LockClient::postgres_with(options).await?;
    /// # drop(locks); Ok(()) }
    /// ```
    #[cfg(feature = "postgres-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres-tls")))]
    pub fn tls_root_certificates(self, path: impl AsRef<std::path::Path>) -> Result<Self, Error> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let path = path.as_ref();
        let certificates = CertificateDer::pem_file_iter(path)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|error| Error::Tls(format!("{}: {error}", path.display())))?;
        let mut roots = rustls::RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(certificates);
        if added == 0 {
            return Err(Error::Tls(format!(
                "{}: no usable CA certificate",
                path.display()
            )));
        }
        self.tls_with_roots(roots)
    }

    #[cfg(feature = "postgres-tls")]
    fn tls_with_roots(mut self, roots: rustls::RootCertStore) -> Result<Self, Error> {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| Error::Tls(error.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        self.tls = Some(tokio_postgres_rustls::MakeRustlsConnect::new(config));
        self.config
            .ssl_mode(tokio_postgres::config::SslMode::Require);
        Ok(self)
    }

    /// Whether sessions use TLS ([`tls`](Self::tls), [`tls_root_certificates`](Self::tls_root_certificates)).
    ///
    /// # Examples
    ///
    /// ```
    /// # let url = "postgres://locks@db.internal/app";
    /// let options = chainlock::distributed::PostgresOptions::new(url)?;
    /// assert!(!options.uses_tls());
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn uses_tls(&self) -> bool {
        #[cfg(feature = "postgres-tls")]
        if self.tls.is_some() {
            return true;
        }
        false
    }

    /// Opens a connection (TLS if asked for): the client and the future to drive it.
    pub(super) async fn connect(&self) -> Result<(Client, Connection), Error> {
        #[cfg(feature = "postgres-tls")]
        if let Some(tls) = &self.tls {
            let (client, connection) = self.config.connect(tls.clone()).await.map_err(tls_error)?;
            return Ok((client, Box::new(connection)));
        }
        let (client, connection) = self.config.connect(NoTls).await?;
        Ok((client, Box::new(connection)))
    }

    /// How many idle connections (holding no lock, running nothing) the client keeps for
    /// later acquisitions (default 16, never more than
    /// [`max_connections`](Self::max_connections)). Zero closes a connection as soon as it
    /// holds no lock.
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

    /// The most connections the client opens at once (default 16; at least 1): however many
    /// locks it holds or waits for, in either mode (exclusive, shared, permits, several keys),
    /// and counting the one it opens to set up.
    ///
    /// Advisory locks belong to a session and one session holds many, so held locks share
    /// connections: an acquisition first asks on a shared connection
    /// (`pg_try_advisory_lock` or `_shared`, one round trip); only if the lock is held does it
    /// wait on the server, on a connection of its own that holds nothing (a wait blocks its
    /// connection), where the lock stays once granted. One client can so hold thousands of
    /// locks on one connection, and any number of shared holds of a key.
    ///
    /// **At the bound** (every connection holds locks or waits, none can be opened), a waiter
    /// waits in line, first come first served: the first in line takes the next connection
    /// that holds nothing (one whose last lock is released, or one freed), then waits on the
    /// server there; it also asks again (one non-waiting ask) each time a lock of this client
    /// is released. Another client's release notifies nobody, so the first waiter in line for
    /// each key also asks again every [`heartbeat_interval`](Self::heartbeat_interval): a key
    /// freed by another client is seen within that interval (plus a round trip), and a timed
    /// wait asks once more at its deadline. A connection the server refuses (a role's or
    /// database's `CONNECTION LIMIT` below this bound, or the server's own `max_connections`)
    /// makes the bound the connections open for a `heartbeat_interval` (or until one of them
    /// closes): waiters wait in line meanwhile instead of failing. Size the bound above the
    /// number of locks this client holds *while waiting for others* (a task holding one key
    /// while it waits for another pins a connection), so that waits happen on the server,
    /// which grants at once. Its timeout and cancel safety are unchanged. A `try_lock`
    /// never waits for a connection while one is serving (a wait never takes the last serving
    /// connection at the bound), except with `max_connections(1)`: the one connection then
    /// also serves waits, and acquisitions that come during a wait on it wait for it (a
    /// `try_lock` then fails with [`Error::Unresponsive`] after `heartbeat_timeout`, and so do
    /// `leader` and `observe`; an observer whose connection ended is told nothing until the
    /// wait ends: a client that observes elections while it waits needs two). Losing a
    /// connection loses every lock it held: each of their guards reports it
    /// ([`is_lost`](crate::distributed::DistributedGuard::is_lost)).
    ///
    /// # Panics
    ///
    /// Panics if `max` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// # let url = "postgres://locks@db.internal/app";
    /// let options = chainlock::distributed::PostgresOptions::new(url)?.max_connections(4);
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    #[track_caller]
    pub fn max_connections(mut self, max: usize) -> Self {
        assert!(max > 0, "max_connections must be at least 1");
        self.max_connections = max;
        self
    }

    /// How often a connection not waiting for a lock proves it is alive (default 1 s).
    ///
    /// A closed connection is reported lost at once; a silent one (a paused process, a
    /// partition, a hung server) [`loss_after`](Self::loss_after) its last confirmed contact.
    ///
    /// # Panics
    ///
    /// Panics if `interval` is zero, or if `heartbeat_interval + heartbeat_timeout` passes
    /// [`MAX_HEARTBEAT_CYCLE`](Self::MAX_HEARTBEAT_CYCLE).
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
        self.check_cycle();
        self
    }

    /// How long a heartbeat (or any statement that does not wait for a lock, and a release)
    /// may go unanswered (default 2 s): the connection is then closed and reported lost.
    ///
    /// # Panics
    ///
    /// Panics if `timeout` is zero, or if `heartbeat_interval + heartbeat_timeout` passes
    /// [`MAX_HEARTBEAT_CYCLE`](Self::MAX_HEARTBEAT_CYCLE).
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
        self.check_cycle();
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

    /// The longest `heartbeat_interval + heartbeat_timeout` (about 8.3 days): the server is
    /// told to release a silent session's locks 3 × that after its last request
    /// (`idle_session_timeout`), and PostgreSQL takes at most 2^31 − 1 ms there. A longer
    /// cycle would let the server release a lock before the guard says it is lost.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::distributed::PostgresOptions;
    /// use std::time::Duration;
    /// assert!(PostgresOptions::MAX_HEARTBEAT_CYCLE > Duration::from_hours(8 * 24));
    /// # let url = "postgres://locks@db.internal/app";
    /// let too_long = std::panic::catch_unwind(|| {
    ///     PostgresOptions::new(url).unwrap().heartbeat_timeout(Duration::MAX)
    /// });
    /// assert!(too_long.is_err());
    /// ```
    pub const MAX_HEARTBEAT_CYCLE: Duration = Duration::from_millis(i32::MAX as u64 / 3);

    #[track_caller]
    fn check_cycle(&self) {
        assert!(
            self.cycle() <= Self::MAX_HEARTBEAT_CYCLE,
            "heartbeat_interval + heartbeat_timeout ({:?}) must be at most {:?}: the server \
             releases a silent session's locks 3 × that after its last request, and \
             PostgreSQL's idle_session_timeout is at most 2^31 - 1 ms",
            self.cycle(),
            Self::MAX_HEARTBEAT_CYCLE
        );
    }

    /// One heartbeat: the wait before it plus the longest it may take.
    fn cycle(&self) -> Duration {
        self.heartbeat_interval
            .saturating_add(self.heartbeat_timeout)
    }
}

/// A failed TLS connection: [`Error::Tls`] when rustls refused (a certificate that does not
/// verify, a handshake failure), [`Error::Postgres`] for everything else.
#[cfg(feature = "postgres-tls")]
fn tls_error(error: tokio_postgres::Error) -> Error {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(current) = cause {
        if let Some(refused) = current.downcast_ref::<rustls::Error>() {
            return Error::Tls(refused.to_string());
        }
        if let Some(refused) = current
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Error::Tls(refused.to_string());
        }
        cause = current.source();
    }
    Error::Postgres(error)
}
