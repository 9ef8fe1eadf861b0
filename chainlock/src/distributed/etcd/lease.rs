//! The client's lease, as etcd's own `concurrency.Session`: granted when the first hold needs
//! it, kept alive by one task every TTL / 3, shared by every hold and waiter of the client, its
//! loss judged on the client's clock from the last confirmed keep-alive (and every hold on it
//! lost with it). A lease that is lost, or *retired*, is replaced by a new one for later holds.
//!
//! A lease is retired when a write with it attached may still land after the client stopped
//! expecting it: a put whose attempt got no answer (the member that hung may forward it once it
//! resumes), an acquisition cancelled while its put was in flight, a delete that failed. A
//! retired lease takes no new hold and is revoked when its last hold or waiter goes, so a key
//! that such a late write leaves behind lives no longer than the holds already on the lease.

use super::super::Error;
use super::keys::{Keys, Role};
use super::members::Members;
use super::request::request;
use super::{EtcdBackend, EtcdOptions};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// What a lease knows of its life, shared with its keep-alive task.
pub(super) struct LeaseState {
    /// When the lease counts as lost: nanoseconds after `base`.
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

    /// Completes when the lease is lost (every hold on it is told at once).
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

/// A granted lease, its keep-alive task and the keys of the holds on it; dropped with its last
/// user (the client, a hold, a waiter, a clean-up), it stops the task and revokes the lease on
/// a background task.
pub(super) struct Lease {
    pub(super) id: i64,
    pub(super) state: Arc<LeaseState>,
    keeper: JoinHandle<()>,
    /// The keys of the live holds and acquisitions on the lease: two holds of one name in one
    /// client never share a key.
    keys: Mutex<HashSet<String>>,
    members: Arc<Members>,
    request_timeout: Duration,
    runtime: Handle,
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
        let members = backend.0.members.clone();
        let keeper = backend
            .0
            .runtime
            .spawn(keep_alive(members.clone(), id, state.clone()));
        Self {
            id,
            state,
            keeper,
            keys: Mutex::new(HashSet::new()),
            members,
            request_timeout: backend.0.options.request_timeout,
            runtime: backend.0.runtime.clone(),
        }
    }

    /// A key of its own on this lease for a hold of `keys`' name in `role`: the name's first
    /// key for the lease if no live hold of this client has it, else the next free one.
    pub(super) fn claim(&self, keys: &Keys, role: Role) -> String {
        let mut claimed = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        // At most `claimed.len()` keys are taken: one of the first `len + 1` is free.
        let key = (0..=u32::try_from(claimed.len()).unwrap_or(u32::MAX))
            .map(|nth| keys.own(role, self.id, nth))
            .find(|key| !claimed.contains(key))
            .expect("one of the first len + 1 keys is free");
        claimed.insert(key.clone());
        key
    }

    /// `key` was deleted: a later hold of this client may use it again.
    pub(super) fn unclaim(&self, key: &str) {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.keeper.abort();
        let (members, limit, id) = (self.members.clone(), self.request_timeout, self.id);
        // Best effort: a lease nobody revokes expires after its TTL (and one that is gone
        // already, expired or revoked by an earlier attempt, is as good).
        drop(self.runtime.spawn(async move {
            request(
                &members,
                limit,
                "a lease revocation",
                |mut client| async move { client.lease_revoke(id).await },
            )
            .await
            .ok();
        }));
    }
}

/// The client's current lease: granted when an acquisition first needs one, shared by every
/// hold and waiter until it is lost or retired, then granted anew.
pub(super) struct ClientLease {
    current: Mutex<Option<Arc<Lease>>>,
    /// One grant at a time: acquisitions that find no usable lease wait for the same grant.
    granting: tokio::sync::Mutex<()>,
}

impl ClientLease {
    pub(super) fn new() -> Self {
        Self {
            current: Mutex::new(None),
            granting: tokio::sync::Mutex::new(()),
        }
    }

    /// The current lease if it is usable (not lost, not retired).
    fn usable(&self) -> Option<Arc<Lease>> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current.as_ref().is_some_and(|lease| lease.state.is_lost()) {
            *current = None;
        }
        current.clone()
    }

    /// The id of the current lease, if any (for `Debug`).
    pub(super) fn id(&self) -> Option<i64> {
        self.usable().map(|lease| lease.id)
    }

    /// The lease for a new acquisition: the current one, or a new grant (within
    /// `request_timeout`, else [`Error::EtcdUnresponsive`]).
    pub(super) async fn get(&self, backend: &EtcdBackend) -> Result<Arc<Lease>, Error> {
        if let Some(lease) = self.usable() {
            return Ok(lease);
        }
        let _granting = self.granting.lock().await;
        if let Some(lease) = self.usable() {
            return Ok(lease);
        }
        let ttl = backend.0.options.ttl;
        let sent = Instant::now();
        let grant = backend
            .call("a lease grant", |mut client| async move {
                client.lease_grant(ttl.as_secs().cast_signed(), None).await
            })
            .await?;
        if grant.ttl() <= 0 {
            return Err(Error::EtcdUnresponsive {
                operation: "a lease grant",
                after: backend.0.options.request_timeout,
            });
        }
        let lease = Arc::new(Lease::start(
            backend,
            grant.id(),
            sent,
            Duration::from_secs(grant.ttl().cast_unsigned()),
        ));
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(lease.clone());
        Ok(lease)
    }

    /// Takes no new hold on `lease` (a write with it attached may land late): later
    /// acquisitions get a new lease, and `lease` is revoked when its last user goes.
    pub(super) fn retire(&self, lease: &Arc<Lease>) {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current.as_ref().is_some_and(|now| Arc::ptr_eq(now, lease)) {
            *current = None;
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
