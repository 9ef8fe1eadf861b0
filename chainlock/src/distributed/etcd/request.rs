//! One request to the cluster: sent to a healthy member ([`Members`]), bounded, and retried
//! on another member, or again, on transient errors.

use super::super::Error;
use super::members::Members;
use super::retry::{deadline_in, refusal, transient};
use etcd_client::Client;
use std::future::Future;
use std::time::Duration;

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
pub(super) async fn request_on<T, F, Fut>(
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
pub(super) const ATTEMPT: Duration = Duration::from_millis(1500);
