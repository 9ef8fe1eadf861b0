//! The connection to the cluster: connecting (one healthy member is enough, and refused
//! credentials, certificates or an unreachable cluster show at once), and every request
//! bounded, sent to a healthy member ([`Members`](super::members::Members)) and retried on
//! another, or again, on transient errors.

use super::super::Error;
use super::lease::ClientLease;
use super::members::{self, Members};
use super::{EtcdBackend, EtcdOptions, Inner};
use etcd_client::Client;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;

/// The error of a failed request that asking again cannot cure: refused credentials, a refused
/// certificate (feature `etcd-tls`).
pub(super) fn refusal(error: &etcd_client::Error) -> Option<Error> {
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

/// Whether an error may pass when asked again (a member died, no leader yet).
pub(super) fn transient(error: &etcd_client::Error) -> bool {
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

/// gRPC's `InvalidArgument` (among others: refused credentials).
pub(super) const INVALID_ARGUMENT: i32 = 3;

impl EtcdBackend {
    /// Connects within `connect_timeout`: returns as soon as one member answers (the others
    /// are connected and judged in the background), or with the first error that no member
    /// can cure (refused credentials or certificate, an invalid endpoint).
    pub(in crate::distributed) async fn connect(
        options: EtcdOptions,
        runtime: Handle,
    ) -> Result<Self, Error> {
        let (endpoints, connect) = options.connection();
        if endpoints.is_empty() {
            return Err(Error::Etcd(etcd_client::Error::InvalidArgs(
                "empty endpoints".to_owned(),
            )));
        }
        let limit = options.connect_timeout;
        let unresponsive = Error::EtcdUnresponsive {
            operation: "connect",
            after: limit,
        };
        let deadline = deadline_in(limit);
        let members = Arc::new(Members::new(endpoints, options.attempt_timeout));
        // Every member at once; each retried on transient errors until the deadline.
        let (sender, mut answers) = tokio::sync::mpsc::unbounded_channel();
        for index in 0..members.len() {
            let (members, connect, sender) = (members.clone(), connect.clone(), sender.clone());
            drop(runtime.spawn(async move {
                let outcome = loop {
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    let outcome =
                        members::probe(&members, index, &connect, left.min(ATTEMPT)).await;
                    match outcome {
                        Err(error) if !members::is_final(&error) => {
                            let pause = tokio::time::Instant::now() + Duration::from_millis(50);
                            if pause >= deadline {
                                break Err(error);
                            }
                            tokio::time::sleep_until(pause).await;
                        }
                        other => break other,
                    }
                };
                sender.send((index, outcome)).ok();
            }));
        }
        drop(sender);
        loop {
            match tokio::time::timeout_at(deadline, answers.recv()).await {
                Ok(Some((index, Ok(())))) => {
                    members.prefer(index);
                    break;
                }
                Ok(Some((_, Err(error)))) if members::is_final(&error) => return Err(error),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return Err(unresponsive),
            }
        }
        drop(runtime.spawn(members::watch_over(
            Arc::downgrade(&members),
            connect,
            options.probe_interval,
        )));
        Ok(Self(Arc::new(Inner {
            members,
            options,
            runtime,
            lease: ClientLease::new(),
        })))
    }

    /// `call` with a client of a healthy member, retried on transient errors (on another
    /// member at once while one is healthy) until `request_timeout` passed.
    pub(super) async fn call<T, F, Fut>(&self, operation: &'static str, call: F) -> Result<T, Error>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.call_on(operation, call).await.map(|(value, _)| value)
    }

    /// [`call`](Self::call), and which member answered.
    pub(super) async fn call_on<T, F, Fut>(
        &self,
        operation: &'static str,
        call: F,
    ) -> Result<(T, usize), Error>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        request_on(
            &self.0.members,
            self.0.options.request_timeout,
            operation,
            call,
        )
        .await
    }
}

/// [`EtcdBackend::call`] on `members` within `limit`, for what outlives a client (a lease
/// revoked after its client was dropped).
pub(super) async fn request<T, F, Fut>(
    members: &Members,
    limit: Duration,
    operation: &'static str,
    call: F,
) -> Result<T, Error>
where
    F: FnMut(Client) -> Fut,
    Fut: Future<Output = Result<T, etcd_client::Error>>,
{
    request_on(members, limit, operation, call)
        .await
        .map(|(value, _)| value)
}

/// [`EtcdBackend::call_on`] on `members` within `limit`.
async fn request_on<T, F, Fut>(
    members: &Members,
    limit: Duration,
    operation: &'static str,
    mut call: F,
) -> Result<(T, usize), Error>
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
        if let Some((index, client)) = members.pick() {
            let member = members.member(index);
            // One attempt waits at most the attempt timeout while another member is
            // healthy, else `ATTEMPT`: a request stuck on a member that hangs, died or
            // lost its leader is asked again, of another member, within the bound.
            let attempt =
                deadline.min(tokio::time::Instant::now() + members.attempt_bound(index, ATTEMPT));
            match tokio::time::timeout_at(attempt, call(client)).await {
                Ok(Ok(value)) => {
                    member.answered();
                    return Ok((value, index));
                }
                Ok(Err(error)) => {
                    if let Some(refused) = refusal(&error) {
                        return Err(refused);
                    }
                    if !transient(&error) {
                        member.answered();
                        return Err(Error::Etcd(error));
                    }
                    member.failed();
                }
                Err(_) => member.failed(),
            }
            if members.any_healthy() {
                if tokio::time::Instant::now() >= deadline {
                    return Err(unresponsive);
                }
                continue;
            }
        }
        let pause = tokio::time::Instant::now() + Duration::from_millis(50);
        if pause >= deadline {
            return Err(unresponsive);
        }
        tokio::time::sleep_until(pause).await;
    }
}

/// The longest single attempt of a request while no other member is healthy.
const ATTEMPT: Duration = Duration::from_millis(1500);

/// `limit` from now; a limit too large for an `Instant` (`Duration::MAX`: no bound) is a
/// deadline thirty years away, as Tokio's own timer does, instead of an overflow.
pub(super) fn deadline_in(limit: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(limit)
        .unwrap_or_else(|| now + Duration::from_hours(30 * 365 * 24))
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
