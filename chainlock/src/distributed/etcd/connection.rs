//! The connection to the cluster: connecting (and showing refused credentials, certificates
//! or an unreachable cluster at once), and every request bounded and retried on transient
//! errors.

use super::super::Error;
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

/// An error of the client crate as chainlock's.
fn etcd_error(error: etcd_client::Error) -> Error {
    refusal(&error).unwrap_or(Error::Etcd(error))
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
pub(super) const NOT_FOUND: i32 = 5;

/// gRPC's `InvalidArgument` (among others: refused credentials).
pub(super) const INVALID_ARGUMENT: i32 = 3;

impl EtcdBackend {
    /// Connects within `connect_timeout`.
    pub(in crate::distributed) async fn connect(
        options: EtcdOptions,
        runtime: Handle,
    ) -> Result<Self, Error> {
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
    pub(super) async fn call<T, F, Fut>(
        &self,
        operation: &'static str,
        mut call: F,
    ) -> Result<T, Error>
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
