//! A hold's lease: granted with a TTL, kept alive by a task every TTL / 3, and the loss
//! judged on the client's clock from the last confirmed keep-alive.

use super::super::Error;
use super::connection::NOT_FOUND;
use super::members::Members;
use super::{EtcdBackend, EtcdOptions};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// What a hold's lease knows of its life, shared with its keep-alive task.
pub(super) struct LeaseState {
    /// When the hold counts as lost: nanoseconds after `base`.
    lost_at: AtomicU64,
    base: Instant,
    lost: AtomicBool,
    changed: Notify,
    pub(super) ttl: Duration,
}

impl LeaseState {
    pub(super) fn is_lost(&self) -> bool {
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

    pub(super) async fn lost(&self) {
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
pub(super) struct Lease {
    id: i64,
    pub(super) state: Arc<LeaseState>,
    keeper: JoinHandle<()>,
    revoked: bool,
    backend: EtcdBackend,
}

impl Lease {
    pub(super) fn start(backend: &EtcdBackend, id: i64, sent: Instant, ttl: Duration) -> Self {
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
                .spawn(keep_alive(backend.0.members.clone(), id, state.clone()));
        Self {
            id,
            state,
            keeper,
            revoked: false,
            backend: backend.clone(),
        }
    }

    /// Revokes the lease (deleting its key), within `request_timeout`.
    pub(super) async fn revoke(mut self, backend: &EtcdBackend) -> Result<(), Error> {
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

/// Keeps lease `id` alive every TTL / 3, on a healthy member, until the lease is lost (the
/// server says it is gone, or the clock passed its deadline). The stream is opened again, on
/// another member while one is healthy, when it breaks, when an answer does not come within an
/// attempt, or when its member is judged unhealthy by anyone (a request, the prober).
async fn keep_alive(members: Arc<Members>, id: i64, state: Arc<LeaseState>) {
    let every = state.ttl / 3;
    let pause = Duration::from_millis(250).min(every);
    while !state.is_lost() {
        let Some((index, mut client)) = members.pick() else {
            tokio::time::sleep(pause).await;
            continue;
        };
        let member = members.member(index);
        let failures = member.failures();
        let sent = Instant::now();
        let opened = tokio::time::timeout(
            members.attempt_bound(index, every),
            client.lease_keep_alive(id),
        )
        .await;
        let (mut keeper, mut stream) = match opened {
            Ok(Ok(pair)) => pair,
            Ok(Err(etcd_client::Error::LeaseKeepAliveError(_))) => {
                // "lease not found": the server expired or revoked it.
                state.mark_lost();
                return;
            }
            _ => {
                member.failed();
                if !members.any_healthy() {
                    tokio::time::sleep(pause).await;
                }
                continue;
            }
        };
        member.answered();
        // Opening the stream sent a keep-alive and read its answer (TTL > 0).
        state.confirmed(sent, state.ttl);
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                // Judged unhealthy since the stream opened: move now.
                () = member.trouble_since(failures) => break,
            }
            let sent = Instant::now();
            if keeper.keep_alive().await.is_err() {
                member.failed();
                break;
            }
            match tokio::time::timeout(members.attempt_bound(index, every), stream.message()).await
            {
                Ok(Ok(Some(response))) if response.ttl() > 0 => {
                    member.answered();
                    state.confirmed(sent, Duration::from_secs(response.ttl().cast_unsigned()));
                }
                Ok(Ok(Some(_))) => {
                    state.mark_lost();
                    return;
                }
                _ => {
                    member.failed();
                    break;
                }
            }
            if state.is_lost() {
                return;
            }
        }
        if !members.any_healthy() {
            tokio::time::sleep(pause).await;
        }
    }
}
