//! The options of an etcd client: endpoints, lease TTL, the bounds of network waits,
//! credentials and TLS, and how they become the client crate's `ConnectOptions`.

#[cfg(feature = "etcd-tls")]
use super::super::Error;
use etcd_client::ConnectOptions;
use std::fmt;
use std::time::Duration;

/// The options of an etcd [`LockClient`](crate::distributed::LockClient): the cluster's endpoints, the
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
    pub(super) endpoints: Vec<String>,
    pub(super) ttl: Duration,
    pub(super) request_timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) attempt_timeout: Duration,
    pub(super) probe_interval: Duration,
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
            .field("attempt_timeout", &self.attempt_timeout)
            .field("probe_interval", &self.probe_interval)
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
            attempt_timeout: Duration::from_millis(500),
            probe_interval: Duration::from_secs(1),
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

    /// The longest one attempt of a request (or a keep-alive) waits on one member while
    /// another member is judged healthy; 500 ms by default. The client keeps a connection to
    /// each endpoint and judges each member's health: a member on which an attempt times out
    /// (it hangs, is stopped, or its packets are dropped) or fails with a transient error is
    /// judged unhealthy, the request is asked of a healthy member at once, and keep-alive
    /// streams and waiters' watches move off it. With no other member healthy, an attempt
    /// waits up to 1.5 s (within [`request_timeout`](Self::request_timeout)). An attempt that
    /// timed out on a member that was only slow is safe: every request is one that may be
    /// asked again. Which members are judged unhealthy shows in the client's `Debug`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = chainlock::distributed::EtcdOptions::new(["http://127.0.0.1:2379"])
    ///     .attempt_timeout(Duration::from_millis(300));
    /// # drop(options);
    /// ```
    #[must_use]
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = timeout;
        self
    }

    /// How often every member is asked for its status (within the
    /// [`attempt_timeout`](Self::attempt_timeout)) to judge its health; 1 s by default. A
    /// member that answers and knows a leader is healthy (used again once it comes back); one
    /// that does not answer in time is unhealthy, so a hung member is found even when no
    /// request goes to it (a waiter's watch on it then moves within this interval and the
    /// attempt timeout).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = chainlock::distributed::EtcdOptions::new(["http://127.0.0.1:2379"])
    ///     .probe_interval(Duration::from_millis(500));
    /// # drop(options);
    /// ```
    #[must_use]
    pub fn probe_interval(mut self, interval: Duration) -> Self {
        self.probe_interval = interval;
        self
    }

    /// Authenticates as `name` with `password` (etcd's auth must be enabled on the cluster),
    /// when the client connects; the client crate renews the token etcd gives. The user needs
    /// read and write rights on the keys under each name it locks (`NAME/`): etcd grants them
    /// per prefix (`etcdctl role grant-permission --prefix=true ROLE readwrite NAME/`). Wrong
    /// credentials are refused at [`LockClient::etcd_with`](crate::distributed::LockClient::etcd_with) with
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
    pub(super) fn connection(&self) -> (Vec<String>, ConnectOptions) {
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
    pub(super) fn margin(ttl: Duration) -> Duration {
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
