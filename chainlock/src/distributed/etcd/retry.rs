//! What asking an etcd member again can cure, and how long to ask: shared by the members'
//! probes (`members.rs`) and every request (`request.rs`).

use super::super::Error;
use std::time::Duration;

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
