//! What can go wrong with a distributed lock, for every backend.

#[cfg(feature = "postgres")]
use std::fmt;
use std::path::PathBuf;
#[cfg(any(feature = "postgres", feature = "etcd"))]
use std::time::Duration;

/// Why an operation of a [`LockClient`](super::LockClient) or a [`DistributedGuard`](super::DistributedGuard) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file operation of the file backend failed.
    #[error("lock file {path}: {source}")]
    Io {
        /// The lock file or directory.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A lock file holds something other than a fencing token (it was written by someone else).
    #[error("lock file {path} is not a chainlock lock file ({len} bytes, expected 0 or 8)")]
    CorruptLockFile {
        /// The lock file.
        path: PathBuf,
        /// Its length in bytes.
        len: u64,
    },
    /// The lock file's path names something chainlock will not lock or write: a symbolic link,
    /// a FIFO, a device, a directory, a file with a second hard link, or a world-writable file
    /// (planted by someone else). Nothing was written.
    #[error("lock file {path} is {reason}: refusing to use it")]
    UnsafeLockFile {
        /// The lock file's path.
        path: PathBuf,
        /// What it is instead of a regular lock file.
        reason: String,
    },
    /// The fencing counter of a name is exhausted (2⁶⁴ − 1 acquisitions).
    #[error("the fencing tokens of this name are exhausted")]
    TokensExhausted,
    /// The PostgreSQL server or the connection to it failed. Displayed with the server's
    /// message (for example `postgres: db error: ERROR: permission denied for schema
    /// chainlock`).
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[error("postgres: {}", postgres_message(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// The lock was lost before it was released (its connection died); another holder may have
    /// had it since.
    #[error("the lock was lost before it was released")]
    Lost,
    /// The PostgreSQL server is older than version 15 (the fencing counter is an unlogged
    /// sequence, new in 15); holds the server's `server_version_num`.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[error("PostgreSQL server_version_num {0} is too old: chainlock needs PostgreSQL 15 or later")]
    UnsupportedServer(String),
    /// The PostgreSQL server did not answer in time (a network partition, a hung server, a
    /// listener that accepts and never answers): `after` is the bound that passed (see
    /// [`PostgresOptions`](super::PostgresOptions) for each bound). The connection concerned was closed, so no lock
    /// it might have been granted survives.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[error("the PostgreSQL server did not answer {stage} within {after:?}")]
    Unresponsive {
        /// What was waiting for the server.
        stage: Stage,
        /// The bound that passed.
        after: Duration,
    },
    /// TLS to PostgreSQL failed: the server's certificate did not verify (unknown CA, wrong
    /// host name, expired), the handshake failed, or the configured roots are unusable. The
    /// message is rustls's (for example `invalid peer certificate: UnknownIssuer`).
    #[cfg(feature = "postgres-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres-tls")))]
    #[error("TLS to PostgreSQL: {0}")]
    Tls(String),
    /// The etcd cluster or the connection to it failed (displayed with etcd's message, for
    /// example `etcd: grpc request error: status: PermissionDenied, ...`).
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    #[error("etcd: {0}")]
    Etcd(#[from] etcd_client::Error),
    /// The etcd cluster did not answer in time (no leader, no quorum, no member reachable):
    /// `after` is the bound that passed ([`EtcdOptions::request_timeout`](super::EtcdOptions::request_timeout), `connect_timeout`,
    /// or, for a waiter whose own lease could not be kept alive, the lease TTL). A lease the
    /// operation may have been granted is revoked or expires; nothing stays held.
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    #[error("the etcd cluster did not answer {operation} within {after:?}")]
    EtcdUnresponsive {
        /// What was waiting for the cluster (`"a lease grant"`, `"an acquisition"`, ...).
        operation: &'static str,
        /// The bound that passed.
        after: Duration,
    },
    /// etcd refused the credentials of [`EtcdOptions::user`](super::EtcdOptions::user) (a
    /// wrong user name or password: at connect), or a request without credentials on a
    /// cluster with auth enabled (`etcdserver: user name is empty`: at the first lock); holds
    /// etcd's message (for example `etcdserver: authentication failed, invalid user ID or
    /// password`). Not retried: asking again with the same credentials cannot succeed. (A user
    /// without the rights on a name's keys gets [`Error::Etcd`] with `permission denied`.)
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    #[error("etcd refused the credentials: {0}")]
    EtcdAuthentication(String),
    /// TLS to etcd failed: the server's certificate did not verify (unknown CA, wrong host
    /// name, expired), the server refused the client's certificate, the handshake failed, or
    /// the configured certificates are unusable. The message is rustls's (for example `invalid
    /// peer certificate: UnknownIssuer`). Not retried.
    #[cfg(feature = "etcd-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd-tls")))]
    #[error("TLS to etcd: {0}")]
    EtcdTls(String),
    /// A helper thread of the file backend could not be started or died.
    #[error("chainlock helper thread failed: {0}")]
    Helper(String),
}

/// The step of an operation that waited for a PostgreSQL server in vain
/// ([`Error::Unresponsive`]).
///
/// # Examples
///
/// ```
/// use chainlock::distributed::{Error, Stage};
/// use std::time::Duration;
///
/// let error = Error::Unresponsive { stage: Stage::Connect, after: Duration::from_secs(2) };
/// assert_eq!(error.to_string(), "the PostgreSQL server did not answer opening a session within 2s");
/// ```
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// Opening a session: connect, start-up, authentication, session set-up, preparing
    /// statements (bounded by [`PostgresOptions::connect_timeout`](super::PostgresOptions::connect_timeout)).
    Connect,
    /// An acquisition in either mode (`try_lock`: `heartbeat_timeout`; `try_lock_for(t)` and
    /// `try_lock_until`: `t + heartbeat_timeout`; `lock`: each statement that does not wait
    /// for the lock).
    Acquire,
    /// A release (`heartbeat_timeout`).
    Release,
}

#[cfg(feature = "postgres")]
impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Connect => "opening a session",
            Self::Acquire => "an acquisition",
            Self::Release => "a release",
        })
    }
}

/// `tokio_postgres` displays a server error as "db error", with the server's words only in its
/// `source()`: this adds them.
#[cfg(feature = "postgres")]
fn postgres_message(error: &tokio_postgres::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.ends_with(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}
