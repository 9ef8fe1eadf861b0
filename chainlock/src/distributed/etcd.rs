//! The etcd backend: etcd's own lock algorithm (`go.etcd.io/etcd/client/v3/concurrency.Mutex`,
//! the one `etcdctl lock` runs), on a cluster that survives the loss of a minority of members.
//!
//! Protocol, per hold (both modes):
//! - A **lease** is granted with a TTL ([`EtcdOptions::ttl`], 10 s by default; never lease 0,
//!   which the server's own lock API silently turns into a 60 s lease nobody renews) and kept
//!   alive by a task of the hold, every TTL / 3, for as long as the hold waits or holds.
//! - The key `<prefix>/<lease id in lower-case hex>` (exclusive) or
//!   `<prefix>/read/<lease id in hex>` (shared) is put with the lease in a transaction, if
//!   absent. The prefix is the name itself (an integer key's display form, `advisory(42)`), as
//!   `etcdctl lock NAME` and `concurrency.NewMutex(session, NAME)` do: they and chainlock
//!   exclude each other on the same name.
//! - **Ownership** by create revision (FIFO): an exclusive hold owns the name once no key under
//!   the prefix has a lower create revision; a shared hold once no exclusive key (a key not under
//!   `<prefix>/read/`) has one. `etcdctl lock` treats every key under the prefix as a holder, so it
//!   excludes readers too.
//! - A waiter **watches only its predecessor** (the last conflicting key created before its
//!   own) for its delete, then looks again: no polling, no thundering herd.
//! - The **fencing token** is the hold's create revision: revisions are global to the cluster
//!   and only increase (across leader changes too), and a later holder's key was created after
//!   every earlier holder's key was deleted or is a later key in the queue.
//! - **Loss**: the server expires the lease no earlier than TTL after it received the last
//!   keep-alive, which is after the client sent it. The hold is lost, on the client's clock,
//!   at `sent + TTL − margin` of the last confirmed keep-alive (margin: TTL / 10, at least
//!   500 ms, for clock-rate differences and scheduling), or at once when the server answers a
//!   keep-alive with TTL ≤ 0 (the lease is gone). This is a function of the clock alone, so a
//!   paused process (SIGSTOP, swap) finds its guard lost when it resumes, before anyone else
//!   can have been given the name.
//! - Every network call is bounded by [`EtcdOptions::request_timeout`] (retried on transient
//!   errors, such as a member that died, until then): [`Error::EtcdUnresponsive`]. A waiter's
//!   watch is bounded by its deadline and by its own lease: a waiter whose lease lapses (the
//!   cluster stopped answering) returns [`Error::EtcdUnresponsive`].
//! - Release revokes the lease (which deletes the key). A lease nobody revokes (a holder killed
//!   with `kill -9`) expires after its TTL and frees the name then.
//! - **Connecting** makes one request (the status of a member) within the connect timeout, so
//!   that wrong credentials ([`Error::EtcdAuthentication`]), a certificate that does not verify
//!   (`Error::EtcdTls`, feature `etcd-tls`) and an unreachable cluster
//!   ([`Error::EtcdUnresponsive`]) show at [`LockClient::etcd_with`](super::LockClient::etcd_with),
//!   not at the first lock. Neither a refused credential nor a refused certificate is retried.

use super::backend::{Backend, BoxFuture, Hold, Mode, Wait};
use super::{Error, FencingToken, LockKey};
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, PutOptions, SortOrder,
    SortTarget, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The options of an etcd [`LockClient`](super::LockClient): the cluster's endpoints, the
/// lease TTL, the bounds of network waits and the credentials.
///
/// # Examples
///
/// ```no_run
/// use chainlock::distributed::{EtcdOptions, LockClient};
/// use std::time::Duration;
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), chainlock::distributed::Error> {
/// let options = EtcdOptions::new(["http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"])
///     .ttl(Duration::from_secs(15))
///     .user("locks", "secret");
/// let locks = LockClient::etcd_with(options).await?;
/// # drop(locks); Ok(()) }
/// ```
#[derive(Clone)]
pub struct EtcdOptions {
    endpoints: Vec<String>,
    ttl: Duration,
    request_timeout: Duration,
    connect_timeout: Duration,
    user: Option<(String, String)>,
    #[cfg(feature = "etcd-tls")]
    tls: Option<TlsSettings>,
}

/// What [`EtcdOptions`] asked of TLS.
#[cfg(feature = "etcd-tls")]
#[derive(Clone, Default)]
struct TlsSettings {
    /// The CA certificates (PEM) that verify the server's; `None`: the system's trust store.
    roots: Option<Vec<u8>>,
    /// The client's certificate chain and private key (PEM), for mutual TLS.
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdOptions")
            .field("endpoints", &self.endpoints)
            .field("ttl", &self.ttl)
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("user", &self.user.as_ref().map(|(name, _)| name))
            .field("tls", &self.uses_tls())
            .finish()
    }
}

impl EtcdOptions {
    /// Options for the cluster at `endpoints` (client URLs such as `http://10.0.0.1:2379`; give
    /// every member, so that the client goes on when one fails), with the defaults: a lease TTL
    /// of 10 s, a request timeout of 5 s, a connect timeout of 5 s, no credentials.
    ///
    /// # Examples
    ///
    /// ```
    /// let options = chainlock::distributed::EtcdOptions::new(["http://127.0.0.1:2379"]);
    /// assert_eq!(options.lease_ttl(), std::time::Duration::from_secs(10));
    /// ```
    pub fn new<I, S>(endpoints: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            ttl: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            user: None,
            #[cfg(feature = "etcd-tls")]
            tls: None,
        }
    }

    /// The lease TTL, in whole seconds (rounded up; at least 2 s, at most etcd's largest,
    /// 9,000,000,000 s, which the server would refuse past): how long after its holder
    /// dies or falls silent a name stays held. The default, 10 s, outlives a leader election
    /// on a loaded machine (measured on a three-member loopback cluster: about 1.2 s, up to
    /// 3.4 s; with a 3 s TTL a holder lost its lease in 1 of 5 leader kills) with room for two
    /// missed keep-alives (sent every TTL / 3). The server may raise a TTL below its minimum
    /// (1.5 × the election timeout); the TTL it grants is the one used.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = chainlock::distributed::EtcdOptions::new(["http://127.0.0.1:2379"])
    ///     .ttl(Duration::from_millis(2500));
    /// assert_eq!(options.lease_ttl(), Duration::from_secs(3));
    /// // Past etcd's largest TTL: its largest (not a wrapped-around 2 s).
    /// let forever = chainlock::distributed::EtcdOptions::new(["http://127.0.0.1:2379"])
    ///     .ttl(Duration::MAX);
    /// assert_eq!(forever.lease_ttl(), Duration::from_secs(9_000_000_000));
    /// ```
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        /// etcd's `MaxLeaseTTL` (`lease/lessor.go`): a grant above it is refused.
        const MAX_TTL_SECONDS: u64 = 9_000_000_000;
        let seconds = ttl
            .as_secs()
            .saturating_add(u64::from(ttl.subsec_nanos() > 0));
        self.ttl = Duration::from_secs(seconds.clamp(2, MAX_TTL_SECONDS));
        self
    }

    /// The lease TTL these options ask for.
    ///
    /// # Examples
    ///
    /// ```
    /// let options = chainlock::distributed::EtcdOptions::new(["http://127.0.0.1:2379"]);
    /// assert!(options.lease_ttl().as_secs() >= 2);
    /// ```
    #[must_use]
    pub fn lease_ttl(&self) -> Duration {
        self.ttl
    }

    /// The bound of every request to the cluster (a lease grant, a transaction, a read, the
    /// creation of a watch, a revocation), retries on transient errors included; 5 s by
    /// default, above the longest leader election measured (3.4 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = chainlock::distributed::EtcdOptions::new(["http://127.0.0.1:2379"])
    ///     .request_timeout(Duration::from_secs(3));
    /// # drop(options);
    /// ```
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The bound of opening the connection (and authenticating); 5 s by default.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = chainlock::distributed::EtcdOptions::new(["http://127.0.0.1:2379"])
    ///     .connect_timeout(Duration::from_secs(2));
    /// # drop(options);
    /// ```
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Authenticates as `name` with `password` (etcd's auth must be enabled on the cluster),
    /// when the client connects; the client crate renews the token etcd gives. The user needs
    /// read and write rights on the keys under each name it locks (`NAME/`): etcd grants them
    /// per prefix (`etcdctl role grant-permission --prefix=true ROLE readwrite NAME/`). Wrong
    /// credentials are refused at [`LockClient::etcd_with`](super::LockClient::etcd_with) with
    /// [`Error::EtcdAuthentication`]; a lock outside the user's rights fails with
    /// [`Error::Etcd`] (`permission denied`). Without TLS (feature `etcd-tls`) the password
    /// crosses the network in the clear.
    ///
    /// # Examples
    ///
    /// ```
    /// let options = chainlock::distributed::EtcdOptions::new(["http://127.0.0.1:2379"])
    ///     .user("locks", "secret");
    /// # drop(options);
    /// ```
    #[must_use]
    pub fn user(mut self, name: impl Into<String>, password: impl Into<String>) -> Self {
        self.user = Some((name.into(), password.into()));
        self
    }

    /// Connects with TLS (rustls), verifying each member's certificate and host name against
    /// the system's trust store. Every endpoint then uses TLS: `http://` endpoints are asked
    /// for as `https://` (nothing is sent in the clear). A member whose certificate does not
    /// verify is refused with `Error::EtcdTls` when the client connects. (An `https://`
    /// endpoint without any TLS option uses TLS with the system's trust store too.)
    ///
    /// # Errors
    ///
    /// `Error::EtcdTls` if the system's trust store has no usable certificate.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// use chainlock::distributed::{EtcdOptions, LockClient};
    ///
    /// let options = EtcdOptions::new(["https://etcd-1.example.com:2379"]).tls()?;
    /// let locks = LockClient::etcd_with(options).await?;
    /// # drop(locks); Ok(()) }
    /// ```
    #[cfg(feature = "etcd-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd-tls")))]
    pub fn tls(mut self) -> Result<Self, Error> {
        let found = rustls_native_certs::load_native_certs();
        let mut roots = rustls::RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err(Error::EtcdTls(format!(
                "no usable certificate in the system's trust store ({} errors)",
                found.errors.len()
            )));
        }
        self.tls.get_or_insert_with(TlsSettings::default).roots = None;
        Ok(self)
    }

    /// Connects with TLS (rustls), verifying each member's certificate and host name against
    /// the CA certificates of the PEM file at `path` only (etcdctl's `--cacert`), for example
    /// your cluster's own CA. Otherwise as [`tls`](Self::tls).
    ///
    /// # Errors
    ///
    /// `Error::EtcdTls` if the file cannot be read or holds no usable certificate.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// use chainlock::distributed::{EtcdOptions, LockClient};
    ///
    /// let options = EtcdOptions::new(["https://10.0.0.1:2379", "https://10.0.0.2:2379"])
    ///     .tls_root_certificates("/etc/etcd/ca.pem")?;
    /// let locks = LockClient::etcd_with(options).await?;
    /// # drop(locks); Ok(()) }
    /// ```
    #[cfg(feature = "etcd-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd-tls")))]
    pub fn tls_root_certificates(
        mut self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<Self, Error> {
        let (pem, certificates) = read_certificates(path.as_ref())?;
        let mut roots = rustls::RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(certificates);
        if added == 0 {
            return Err(Error::EtcdTls(format!(
                "{}: no usable CA certificate",
                path.as_ref().display()
            )));
        }
        self.tls.get_or_insert_with(TlsSettings::default).roots = Some(pem);
        Ok(self)
    }

    /// Presents the client certificate (chain) of the PEM file `certificate`, with the private
    /// key of the PEM file `key`, to members that require one (etcd's `--client-cert-auth`;
    /// etcdctl's `--cert` and `--key`). Turns TLS on as [`tls`](Self::tls) does, unless
    /// [`tls_root_certificates`](Self::tls_root_certificates) chose the roots.
    ///
    /// # Errors
    ///
    /// `Error::EtcdTls` if a file cannot be read, or holds no certificate or no private key.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// use chainlock::distributed::{EtcdOptions, LockClient};
    ///
    /// let options = EtcdOptions::new(["https://10.0.0.1:2379"])
    ///     .tls_root_certificates("/etc/etcd/ca.pem")?
    ///     .tls_client_certificate("/etc/myapp/etcd-client.pem", "/etc/myapp/etcd-client-key.pem")?;
    /// let locks = LockClient::etcd_with(options).await?;
    /// # drop(locks); Ok(()) }
    /// ```
    #[cfg(feature = "etcd-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd-tls")))]
    pub fn tls_client_certificate(
        mut self,
        certificate: impl AsRef<std::path::Path>,
        key: impl AsRef<std::path::Path>,
    ) -> Result<Self, Error> {
        use rustls::pki_types::PrivateKeyDer;
        use rustls::pki_types::pem::PemObject;
        let (chain, certificates) = read_certificates(certificate.as_ref())?;
        if certificates.is_empty() {
            return Err(Error::EtcdTls(format!(
                "{}: no certificate",
                certificate.as_ref().display()
            )));
        }
        let key = key.as_ref();
        let unusable =
            |error: &dyn fmt::Display| Error::EtcdTls(format!("{}: {error}", key.display()));
        let pem = std::fs::read(key).map_err(|error| unusable(&error))?;
        PrivateKeyDer::from_pem_slice(&pem).map_err(|error| unusable(&error))?;
        self.tls.get_or_insert_with(TlsSettings::default).identity = Some((chain, pem));
        Ok(self)
    }

    /// Whether connections use TLS ([`tls`](Self::tls),
    /// [`tls_root_certificates`](Self::tls_root_certificates),
    /// [`tls_client_certificate`](Self::tls_client_certificate), feature `etcd-tls`; or an
    /// `https://` endpoint).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::distributed::EtcdOptions;
    ///
    /// assert!(!EtcdOptions::new(["http://127.0.0.1:2379"]).uses_tls());
    /// assert!(EtcdOptions::new(["https://127.0.0.1:2379"]).uses_tls());
    /// ```
    #[must_use]
    pub fn uses_tls(&self) -> bool {
        #[cfg(feature = "etcd-tls")]
        if self.tls.is_some() {
            return true;
        }
        self.endpoints
            .iter()
            .any(|endpoint| endpoint.starts_with("https://"))
    }

    /// The endpoints to connect to, and the client crate's options.
    fn connection(&self) -> (Vec<String>, ConnectOptions) {
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(self.connect_timeout)
            .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2))
            .with_keep_alive_while_idle(true)
            .with_require_leader(true);
        if let Some((name, password)) = &self.user {
            connect = connect.with_user(name.clone(), password.clone());
        }
        #[cfg(feature = "etcd-tls")]
        if self.uses_tls() {
            use etcd_client::{Certificate, Identity, TlsOptions};
            let settings = self.tls.clone().unwrap_or_default();
            let mut tls = TlsOptions::new();
            tls = match settings.roots {
                Some(pem) => tls.ca_certificate(Certificate::from_pem(pem)),
                None => tls.with_native_roots(),
            };
            if let Some((chain, key)) = settings.identity {
                tls = tls.identity(Identity::from_pem(chain, key));
            }
            connect = connect.with_tls(tls);
            let endpoints = self
                .endpoints
                .iter()
                .map(|endpoint| {
                    let rest = endpoint
                        .strip_prefix("https://")
                        .or_else(|| endpoint.strip_prefix("http://"))
                        .unwrap_or(endpoint);
                    format!("https://{rest}")
                })
                .collect();
            return (endpoints, connect);
        }
        (self.endpoints.clone(), connect)
    }

    /// The loss margin: a hold is lost this long before the server may expire its lease.
    fn margin(ttl: Duration) -> Duration {
        (ttl / 10).max(Duration::from_millis(500))
    }
}

/// The PEM file at `path` and the certificates in it.
#[cfg(feature = "etcd-tls")]
fn read_certificates(
    path: &std::path::Path,
) -> Result<(Vec<u8>, Vec<rustls::pki_types::CertificateDer<'static>>), Error> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let unusable =
        |error: &dyn fmt::Display| Error::EtcdTls(format!("{}: {error}", path.display()));
    let pem = std::fs::read(path).map_err(|error| unusable(&error))?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| unusable(&error))?;
    Ok((pem, certificates))
}

/// The error of a failed request that asking again cannot cure: refused credentials, a refused
/// certificate (feature `etcd-tls`).
fn refusal(error: &etcd_client::Error) -> Option<Error> {
    if let etcd_client::Error::GRpcStatus(status) = error
        && status.code() as i32 == INVALID_ARGUMENT
        && (status.message().contains("authentication failed")
            || status.message().contains("user name is empty"))
    {
        return Some(Error::EtcdAuthentication(status.message().to_owned()));
    }
    #[cfg(feature = "etcd-tls")]
    {
        // `etcd_client::Error` has no `source()`: the chain starts inside it.
        let mut cause: Option<&(dyn std::error::Error + 'static)> = match error {
            etcd_client::Error::GRpcStatus(status) => Some(status),
            etcd_client::Error::TransportError(transport) => Some(transport),
            etcd_client::Error::IoError(io) => Some(io),
            _ => None,
        };
        while let Some(current) = cause {
            let refused = current.downcast_ref::<rustls::Error>().or_else(|| {
                current
                    .downcast_ref::<std::io::Error>()
                    .and_then(std::io::Error::get_ref)
                    .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            });
            if let Some(refused) = refused {
                return Some(Error::EtcdTls(refused.to_string()));
            }
            cause = current.source();
        }
    }
    None
}

/// An error of the client crate as chainlock's.
fn etcd_error(error: etcd_client::Error) -> Error {
    refusal(&error).unwrap_or(Error::Etcd(error))
}

/// The prefix of a key: the name itself (as `etcdctl lock NAME`), or an integer key's display
/// form.
fn prefix(key: LockKey<'_>) -> String {
    match key {
        LockKey::Name(name) => name.to_owned(),
        other => other.to_string(),
    }
}

/// Whether an error may pass when asked again (a member died, no leader yet).
fn transient(error: &etcd_client::Error) -> bool {
    match error {
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        // gRPC codes (tonic's `Code`, not re-exported by etcd-client): Unknown, DeadlineExceeded,
        // Aborted, Internal, Unavailable.
        // A status with a source was made by the client from a transport error (a connection
        // refused, closed or reset): the request did not get an answer.
        etcd_client::Error::GRpcStatus(status) => {
            std::error::Error::source(status).is_some()
                || matches!(status.code() as i32, 2 | 4 | 10 | 13 | 14)
        }
        _ => false,
    }
}

/// gRPC's `NotFound` (a lease that expired or was revoked).
const NOT_FOUND: i32 = 5;

/// gRPC's `InvalidArgument` (among others: refused credentials).
const INVALID_ARGUMENT: i32 = 3;

struct Inner {
    client: Client,
    options: EtcdOptions,
    runtime: Handle,
}

/// The etcd backend: a connection (balanced over the endpoints) shared by every hold.
#[derive(Clone)]
pub(super) struct EtcdBackend(Arc<Inner>);

impl EtcdBackend {
    /// Connects within `connect_timeout`.
    pub(super) async fn connect(options: EtcdOptions, runtime: Handle) -> Result<Self, Error> {
        let (endpoints, connect) = options.connection();
        let limit = options.connect_timeout;
        let unresponsive = Error::EtcdUnresponsive {
            operation: "connect",
            after: limit,
        };
        let deadline = deadline_in(limit);
        // With a user, connecting authenticates: retried as a request is, within the bound.
        let client = loop {
            match tokio::time::timeout_at(
                deadline,
                Client::connect(&endpoints, Some(connect.clone())),
            )
            .await
            {
                Ok(Ok(client)) => break client,
                Ok(Err(error)) if refusal(&error).is_none() && transient(&error) => {
                    let pause = tokio::time::Instant::now() + Duration::from_millis(50);
                    if pause >= deadline {
                        return Err(unresponsive);
                    }
                    tokio::time::sleep_until(pause).await;
                }
                Ok(Err(error)) => return Err(etcd_error(error)),
                Err(_) => return Err(unresponsive),
            }
        };
        // The connection is lazy (and authenticates only with a user): one request shows
        // refused credentials or certificates, and an unreachable cluster, now.
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        request(
            &client,
            left,
            "connect",
            &mut |mut client: Client| async move { client.status().await.map(drop) },
        )
        .await
        .or_else(|error| match error {
            Error::EtcdUnresponsive { .. } => Err(Error::EtcdUnresponsive {
                operation: "connect",
                after: limit,
            }),
            // The cluster answered (a user without the right to ask for its status, say).
            Error::Etcd(etcd_client::Error::GRpcStatus(_)) => Ok(()),
            other => Err(other),
        })?;
        Ok(Self(Arc::new(Inner {
            client,
            options,
            runtime,
        })))
    }

    /// `call` with a clone of the client, retried on transient errors until `limit` passed.
    async fn call<T, F, Fut>(&self, operation: &'static str, mut call: F) -> Result<T, Error>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        request(
            &self.0.client,
            self.0.options.request_timeout,
            operation,
            &mut call,
        )
        .await
    }

    async fn acquire(
        &self,
        key: LockKey<'_>,
        mode: Mode,
        wait: Wait,
    ) -> Result<Option<EtcdHeld>, Error> {
        let ttl = self.0.options.ttl;
        let sent = Instant::now();
        let grant = self
            .call("a lease grant", |mut client| async move {
                client.lease_grant(ttl.as_secs().cast_signed(), None).await
            })
            .await?;
        if grant.ttl() <= 0 {
            return Err(Error::EtcdUnresponsive {
                operation: "a lease grant",
                after: self.0.options.request_timeout,
            });
        }
        let lease = Lease::start(
            self,
            grant.id(),
            sent,
            Duration::from_secs(grant.ttl().cast_unsigned()),
        );
        let prefix = prefix(key);
        let own = match mode {
            Mode::Exclusive => format!("{prefix}/{:x}", grant.id()),
            Mode::Shared => format!("{prefix}/read/{:x}", grant.id()),
        };
        let prefix = format!("{prefix}/");
        let readers = format!("{prefix}read/");
        let id = grant.id();
        let response = self
            .call("an acquisition", |mut client| {
                let (own, prefix) = (own.clone(), prefix.clone());
                async move {
                    let earliest = GetOptions::new()
                        .with_prefix()
                        .with_keys_only()
                        .with_sort(SortTarget::Create, SortOrder::Ascend)
                        .with_limit(1);
                    let txn = Txn::new()
                        .when([Compare::create_revision(own.clone(), CompareOp::Equal, 0)])
                        .and_then([
                            TxnOp::put(own.clone(), "", Some(PutOptions::new().with_lease(id))),
                            TxnOp::get(prefix.clone(), Some(earliest.clone())),
                        ])
                        .or_else([TxnOp::get(own, None), TxnOp::get(prefix, Some(earliest))]);
                    client.txn(txn).await
                }
            })
            .await?;
        let ops = response.op_responses();
        let revision = if response.succeeded() {
            response
                .header()
                .map_or(0, etcd_client::ResponseHeader::revision)
        } else {
            match ops.first() {
                Some(TxnOpResponse::Get(get)) => get
                    .kvs()
                    .first()
                    .map_or(0, etcd_client::KeyValue::create_revision),
                _ => 0,
            }
        };
        if revision <= 0 {
            return Err(Error::Lost);
        }
        let first = match ops.get(1) {
            Some(TxnOpResponse::Get(get)) => get
                .kvs()
                .first()
                .map(etcd_client::KeyValue::create_revision),
            _ => None,
        };
        // Uncontended: our key is the earliest under the prefix (one round trip).
        let mut held = first == Some(revision);
        if !held && mode == Mode::Shared {
            held = self
                .predecessor(&prefix, &readers, revision, mode)
                .await?
                .is_none();
        }
        if !held {
            if matches!(wait, Wait::Never) {
                lease.revoke(self).await.ok();
                return Ok(None);
            }
            let turn = self
                .wait_for_turn(&prefix, &readers, &own, revision, mode, wait, &lease)
                .await?;
            if !turn {
                lease.revoke(self).await.ok();
                return Ok(None);
            }
        }
        Ok(Some(EtcdHeld {
            lease: Some(lease),
            token: FencingToken::new(revision.cast_unsigned()),
            backend: self.clone(),
        }))
    }

    /// The last key under `prefix` created before `revision` that conflicts with `mode` (any
    /// key for an exclusive hold, a key outside `readers` for a shared one), with the revision
    /// of the read.
    async fn predecessor(
        &self,
        prefix: &str,
        readers: &str,
        revision: i64,
        mode: Mode,
    ) -> Result<Option<(Vec<u8>, i64)>, Error> {
        let response = self
            .call("a read of the queue", |mut client| {
                let prefix = prefix.to_owned();
                async move {
                    let mut options = GetOptions::new()
                        .with_prefix()
                        .with_keys_only()
                        .with_max_create_revision(revision - 1)
                        .with_sort(SortTarget::Create, SortOrder::Descend);
                    if mode == Mode::Exclusive {
                        options = options.with_limit(1);
                    }
                    client.get(prefix, Some(options)).await
                }
            })
            .await?;
        let at = response
            .header()
            .map_or(0, etcd_client::ResponseHeader::revision);
        Ok(response
            .kvs()
            .iter()
            .find(|kv| mode == Mode::Exclusive || !kv.key().starts_with(readers.as_bytes()))
            .map(|kv| (kv.key().to_vec(), at)))
    }

    /// Waits until no conflicting key created before `revision` is left: `true`, or `false`
    /// once the wait's deadline passed.
    #[allow(clippy::too_many_arguments)]
    async fn wait_for_turn(
        &self,
        prefix: &str,
        readers: &str,
        own: &str,
        revision: i64,
        mode: Mode,
        wait: Wait,
        lease: &Lease,
    ) -> Result<bool, Error> {
        let deadline = wait.deadline().map(tokio::time::Instant::from_std);
        let expired = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(expired);
        loop {
            if lease.state.is_lost() {
                return Err(Error::EtcdUnresponsive {
                    operation: "keeping a waiter's lease alive",
                    after: lease.state.ttl,
                });
            }
            let Some((key, at)) = self.predecessor(prefix, readers, revision, mode).await? else {
                break;
            };
            let mut watch = self
                .call("a watch", |mut client| {
                    let key = key.clone();
                    async move {
                        client
                            .watch(key, Some(WatchOptions::new().with_start_revision(at + 1)))
                            .await
                    }
                })
                .await?;
            // Until the predecessor's delete, our lease's loss, or the deadline.
            let mut trouble = false;
            loop {
                tokio::select! {
                    () = &mut expired => return Ok(false),
                    () = lease.state.lost() => break,
                    message = watch.message() => {
                        let Ok(Some(response)) = message else {
                            trouble = true;
                            break;
                        };
                        if response.canceled() {
                            trouble = true;
                            break;
                        }
                        if response
                            .events()
                            .iter()
                            .any(|event| event.event_type() == EventType::Delete)
                        {
                            break;
                        }
                    }
                }
            }
            if trouble {
                // The stream broke (a member died): look again after a short pause, within
                // the deadline.
                tokio::select! {
                    () = &mut expired => return Ok(false),
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        }
        // As Go's Mutex: make sure our key (hence our lease) is still there.
        let response = self
            .call("a read of the own key", |mut client| {
                let own = own.to_owned();
                async move {
                    client
                        .get(own, Some(GetOptions::new().with_keys_only()))
                        .await
                }
            })
            .await?;
        match response.kvs().first() {
            Some(kv) if kv.create_revision() == revision => Ok(true),
            _ => Err(Error::Lost),
        }
    }
}

/// The longest single attempt of a request.
const ATTEMPT: Duration = Duration::from_millis(1500);

/// `limit` from now; a limit too large for an `Instant` (`Duration::MAX`: no bound) is a
/// deadline thirty years away, as Tokio's own timer does, instead of an overflow.
fn deadline_in(limit: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(limit)
        .unwrap_or_else(|| now + Duration::from_hours(30 * 365 * 24))
}

/// A request to the cluster, retried on transient errors, bounded by `limit` in all.
async fn request<T, F, Fut>(
    client: &Client,
    limit: Duration,
    operation: &'static str,
    call: &mut F,
) -> Result<T, Error>
where
    F: FnMut(Client) -> Fut,
    Fut: Future<Output = Result<T, etcd_client::Error>>,
{
    let deadline = deadline_in(limit);
    let unresponsive = Error::EtcdUnresponsive {
        operation,
        after: limit,
    };
    loop {
        // One attempt waits at most `ATTEMPT`: a request stuck on a member that died or lost
        // its leader is asked again (possibly of another member) within the bound.
        let attempt = deadline.min(tokio::time::Instant::now() + ATTEMPT);
        match tokio::time::timeout_at(attempt, call(client.clone())).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => {
                if let Some(refused) = refusal(&error) {
                    return Err(refused);
                }
                if !transient(&error) {
                    return Err(Error::Etcd(error));
                }
            }
            Err(_) => {}
        }
        let pause = tokio::time::Instant::now() + Duration::from_millis(50);
        if pause >= deadline {
            return Err(unresponsive);
        }
        tokio::time::sleep_until(pause).await;
    }
}

/// What a hold's lease knows of its life, shared with its keep-alive task.
struct LeaseState {
    /// When the hold counts as lost: nanoseconds after `base`.
    lost_at: AtomicU64,
    base: Instant,
    lost: AtomicBool,
    changed: Notify,
    ttl: Duration,
}

impl LeaseState {
    fn is_lost(&self) -> bool {
        if self.lost.load(Ordering::Acquire) {
            return true;
        }
        let now = self.base.elapsed().as_nanos() as u64;
        if now >= self.lost_at.load(Ordering::Acquire) {
            self.mark_lost();
            return true;
        }
        false
    }

    fn mark_lost(&self) {
        if !self.lost.swap(true, Ordering::AcqRel) {
            self.changed.notify_waiters();
        }
    }

    /// A keep-alive sent at `sent` was answered with `ttl`.
    fn confirmed(&self, sent: Instant, ttl: Duration) {
        let until = (sent + ttl)
            .checked_sub(EtcdOptions::margin(ttl))
            .unwrap_or(sent);
        let at = until.saturating_duration_since(self.base).as_nanos() as u64;
        self.lost_at.fetch_max(at, Ordering::AcqRel);
    }

    async fn lost(&self) {
        loop {
            let notified = self.changed.notified();
            if self.is_lost() {
                return;
            }
            let at = self.base + Duration::from_nanos(self.lost_at.load(Ordering::Acquire));
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep_until(at.into()) => {}
            }
        }
    }
}

/// A granted lease and its keep-alive task; dropping it stops the task and revokes the lease
/// on a background task.
struct Lease {
    id: i64,
    state: Arc<LeaseState>,
    keeper: JoinHandle<()>,
    revoked: bool,
    backend: EtcdBackend,
}

impl Lease {
    fn start(backend: &EtcdBackend, id: i64, sent: Instant, ttl: Duration) -> Self {
        let state = Arc::new(LeaseState {
            lost_at: AtomicU64::new(0),
            base: sent,
            lost: AtomicBool::new(false),
            changed: Notify::new(),
            ttl,
        });
        state.confirmed(sent, ttl);
        let keeper =
            backend
                .0
                .runtime
                .spawn(keep_alive(backend.0.client.clone(), id, state.clone()));
        Self {
            id,
            state,
            keeper,
            revoked: false,
            backend: backend.clone(),
        }
    }

    /// Revokes the lease (deleting its key), within `request_timeout`.
    async fn revoke(mut self, backend: &EtcdBackend) -> Result<(), Error> {
        self.revoked = true;
        self.keeper.abort();
        let id = self.id;
        let attempts = AtomicU64::new(0);
        let result = backend
            .call("a release", |mut client| {
                attempts.fetch_add(1, Ordering::Relaxed);
                async move { client.lease_revoke(id).await }
            })
            .await;
        match result {
            Ok(_) => Ok(()),
            // Gone. If an earlier attempt got no answer (the member it went to died, say), that
            // attempt may have revoked it: released, unless the clock says the lease may have
            // expired first. Otherwise it expired: nothing was held any more.
            Err(Error::Etcd(etcd_client::Error::GRpcStatus(status)))
                if status.code() as i32 == NOT_FOUND =>
            {
                if attempts.load(Ordering::Relaxed) > 1 && !self.state.is_lost() {
                    Ok(())
                } else {
                    Err(Error::Lost)
                }
            }
            Err(other) => Err(other),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.keeper.abort();
        if !self.revoked {
            let (backend, id) = (self.backend.clone(), self.id);
            drop(self.backend.0.runtime.spawn(async move {
                backend
                    .call("a release", |mut client| async move {
                        client.lease_revoke(id).await
                    })
                    .await
                    .ok();
            }));
        }
    }
}

/// Keeps lease `id` alive every TTL / 3, reopening the stream when it breaks, until the lease
/// is lost (the server says it is gone, or the clock passed its deadline).
async fn keep_alive(client: Client, id: i64, state: Arc<LeaseState>) {
    let every = state.ttl / 3;
    let pause = Duration::from_millis(250).min(every);
    while !state.is_lost() {
        let sent = Instant::now();
        let opened = tokio::time::timeout(every, {
            let mut client = client.clone();
            async move { client.lease_keep_alive(id).await }
        })
        .await;
        let (mut keeper, mut stream) = match opened {
            Ok(Ok(pair)) => pair,
            Ok(Err(etcd_client::Error::LeaseKeepAliveError(_))) => {
                // "lease not found": the server expired or revoked it.
                state.mark_lost();
                return;
            }
            _ => {
                tokio::time::sleep(pause).await;
                continue;
            }
        };
        // Opening the stream sent a keep-alive and read its answer (TTL > 0).
        state.confirmed(sent, state.ttl);
        loop {
            tokio::time::sleep(every).await;
            let sent = Instant::now();
            if keeper.keep_alive().await.is_err() {
                break;
            }
            match tokio::time::timeout(every, stream.message()).await {
                Ok(Ok(Some(response))) if response.ttl() > 0 => {
                    state.confirmed(sent, Duration::from_secs(response.ttl().cast_unsigned()));
                }
                Ok(Ok(Some(_))) => {
                    state.mark_lost();
                    return;
                }
                _ => break,
            }
            if state.is_lost() {
                return;
            }
        }
        tokio::time::sleep(pause).await;
    }
}

impl Backend for EtcdBackend {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn acquire<'a>(
        &'a self,
        key: LockKey<'a>,
        mode: Mode,
        wait: Wait,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Hold>>, Error>> {
        Box::pin(async move {
            Ok(EtcdBackend::acquire(self, key, mode, wait)
                .await?
                .map(|held| Box::new(held) as Box<dyn Hold>))
        })
    }

    fn describe(&self, f: &mut fmt::DebugStruct<'_, '_>) {
        f.field("backend", &"etcd")
            .field("endpoints", &self.0.options.endpoints)
            .field("ttl", &self.0.options.ttl);
    }
}

/// A held key: its lease (revoked on release or drop) and its create revision.
struct EtcdHeld {
    lease: Option<Lease>,
    token: FencingToken,
    backend: EtcdBackend,
}

impl EtcdHeld {
    fn state(&self) -> &LeaseState {
        &self.lease.as_ref().expect("a held key has its lease").state
    }
}

impl Hold for EtcdHeld {
    fn token(&self) -> FencingToken {
        self.token
    }

    fn is_lost(&self) -> bool {
        self.state().is_lost()
    }

    fn lost(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.state().lost())
    }

    /// Revokes on a task of its own, so that the lock is released even if the caller stops
    /// waiting for the outcome.
    fn release(mut self: Box<Self>) -> BoxFuture<'static, Result<(), Error>> {
        let lease = self.lease.take().expect("a held key has its lease");
        let backend = self.backend.clone();
        let lost = lease.state.is_lost();
        let task = self.backend.0.runtime.spawn(async move {
            let revoked = lease.revoke(&backend).await;
            if lost { Err(Error::Lost) } else { revoked }
        });
        Box::pin(async move { task.await.unwrap_or(Err(Error::Lost)) })
    }
}

#[cfg(test)]
mod tests {
    use super::deadline_in;
    use std::time::Duration;

    /// `Duration::MAX` as a bound (no bound) is a far deadline, not an overflow panic.
    #[test]
    fn an_unbounded_limit_is_a_far_deadline() {
        let now = tokio::time::Instant::now();
        let far = deadline_in(Duration::MAX);
        assert!(far > now + Duration::from_hours(10 * 365 * 24));
        let near = deadline_in(Duration::from_secs(1));
        assert!(near >= now + Duration::from_secs(1) && near < far);
    }
}
