//! The etcd backend: etcd's own lock algorithm (`go.etcd.io/etcd/client/v3/concurrency.Mutex`,
//! the one `etcdctl lock` runs), on a cluster that survives the loss of a minority of members.
//!
//! Protocol (both modes):
//! - **One lease per client**, as etcd's `concurrency.Session` (`lease.rs`): granted with a TTL
//!   ([`EtcdOptions::ttl`], 10 s by default; never lease 0, which the server's own lock API
//!   silently turns into a 60 s lease nobody renews) when the first acquisition needs it, kept
//!   alive by one task every TTL / 3, shared by every hold and waiter of the client. When it is
//!   lost, every hold on it is lost (each told), and later acquisitions get a new lease.
//! - Per hold, the key `NAME/<lease id in lower-case hex>` (exclusive) or
//!   `NAME/r<lease id in hex>` (shared) is put with the lease in a transaction, if absent (the
//!   layout: `keys.rs`; a client's second hold of a name at once has a key of its own). An
//!   exclusive key is the one `etcdctl lock NAME` and `concurrency.NewMutex(session, NAME)`
//!   put: they and chainlock exclude each other on the same name.
//! - **Ownership** by create revision (FIFO): an exclusive hold owns the name once no key in
//!   `NAME/` has a lower create revision; a shared hold once no key but the name's shared
//!   holds has one. `etcdctl lock` treats every key in `NAME/` as a holder, so it excludes
//!   readers too.
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
//! - Every network call is bounded by [`EtcdOptions::request_timeout`] (`request.rs`; retried
//!   on transient errors, such as a member that died, until then: `retry.rs`): [`Error::EtcdUnresponsive`]. A waiter's
//!   watch is bounded by its deadline and by its lease: a waiter whose lease is lost queues
//!   again under the client's next lease (behind every key present then), and returns
//!   [`Error::EtcdUnresponsive`] if no lease can be granted (the cluster stopped answering).
//! - **Members** (`members.rs`): a connection to each endpoint and a judgement of each
//!   member's health. A request goes to a healthy member; an attempt waits at most
//!   [`EtcdOptions::attempt_timeout`] while another member is healthy, then moves there (and
//!   the member is judged unhealthy); keep-alive streams and watches move off a member judged
//!   unhealthy; a prober asks every member every [`EtcdOptions::probe_interval`]. So a hung or
//!   cut-off minority member costs at most one attempt timeout, once, not a wait per request.
//! - **Release** deletes the key in a transaction compared on its create revision (never
//!   another hold's key), two writes per uncontended hold as Go's Mutex on its session; a
//!   dropped guard, and an acquisition cancelled or ended without the lock, delete theirs on a
//!   background task (`Pending`). A write whose outcome is unknown (an attempt that got no
//!   answer, a put in flight when its acquisition was cancelled, a failed delete) *retires* the
//!   lease: it takes no new hold and is revoked with its last hold, so a late write cannot
//!   leave a key on a lease that lives on. A lease nobody revokes (a client killed with
//!   `kill -9`) expires after its TTL and frees its names then; a dropped client revokes it.
//! - **Connecting** asks every member for its status at once and returns when the first
//!   answers (within the connect timeout), so
//!   that wrong credentials ([`Error::EtcdAuthentication`]), a certificate that does not verify
//!   (`Error::EtcdTls`, feature `etcd-tls`) and an unreachable cluster
//!   ([`Error::EtcdUnresponsive`]) show at [`LockClient::etcd_with`](crate::distributed::LockClient::etcd_with),
//!   not at the first lock. Neither a refused credential nor a refused certificate is retried.
//! - **Leader election** (`election.rs`): etcd's own (`concurrency.Election`, `etcdctl
//!   elect`), a candidacy being a key of the lock's protocol with the candidate's value.

mod connection;
mod election;
mod keys;
mod lease;
mod lock;
mod members;
mod options;
mod request;
mod retry;

use super::backend::{Backend, BoxFuture, Hold, Leading, Mode, Wait};
use super::election::leader::{Leader, Publisher};
use super::{Error, FencingToken, LockKey};
use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use lease::{ClientLease, Lease};
use members::Members;
pub use options::EtcdOptions;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use tokio::runtime::Handle;

struct Inner {
    members: Arc<Members>,
    options: EtcdOptions,
    runtime: Handle,
    /// The lease every hold and waiter of the client shares.
    lease: ClientLease,
}

/// The etcd backend: a connection to each member, judged healthy or not, and the client's
/// lease, shared by every hold.
#[derive(Clone)]
pub(super) struct EtcdBackend(Arc<Inner>);

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
            .field("members", &self.0.members)
            .field("ttl", &self.0.options.ttl)
            .field("lease", &self.0.lease.id().map(|id| format!("{id:x}")));
    }

    fn campaign<'a>(
        &'a self,
        name: &'a str,
        value: &'a [u8],
        wait: Wait,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Leading>>, Error>> {
        Box::pin(async move {
            Ok(EtcdBackend::campaign(self, name, value, wait)
                .await?
                .map(|held| Box::new(held) as Box<dyn Leading>))
        })
    }

    fn leader<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Leader>, Error>> {
        Box::pin(EtcdBackend::leader(self, name))
    }

    /// Told of changes by watches, as `Election.Observe`.
    fn observe(self: Arc<Self>, name: String, publisher: Publisher) -> BoxFuture<'static, ()> {
        Box::pin(EtcdBackend::observe((*self).clone(), name, publisher))
    }
}

/// A key an acquisition put, or may have put, on its lease. Dropped without a
/// [`delete`](Self::delete) (an acquisition cancelled or ended without the lock, a hold dropped
/// without a release), it is deleted on a background task: the lease is the client's and lives
/// on, so nothing else would delete it.
struct Pending {
    key: String,
    lease: Arc<Lease>,
    /// The key's create revision once the put was answered; `None` while it may be in flight.
    revision: Option<i64>,
    backend: EtcdBackend,
}

impl Pending {
    /// Deletes the key now (see [`delete_key`]); if this is cancelled, the drop deletes it.
    async fn delete(&mut self) -> Result<(), Error> {
        let deleted = delete_key(&self.backend, &self.lease, &self.key, self.revision).await;
        self.key.clear();
        deleted
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.key.is_empty() {
            return;
        }
        let (backend, lease, key, revision) = (
            self.backend.clone(),
            self.lease.clone(),
            std::mem::take(&mut self.key),
            self.revision,
        );
        drop(self.backend.0.runtime.spawn(async move {
            delete_key(&backend, &lease, &key, revision).await.ok();
        }));
    }
}

/// Deletes `key` of `lease`, within `request_timeout`: compared on its create revision
/// `revision` (never another hold's key, nor a later one of the same name), or, with no
/// revision known (the put may still land), on its lease, after retiring the lease so that a
/// put landing later goes with it. `Ok` if deleted, or if an earlier attempt of this delete
/// did; [`Error::Lost`] if the key was gone (expired with its lease, or deleted by someone
/// else). A delete that fails retires the lease too: the key then goes with it, once the
/// lease's last hold is released.
async fn delete_key(
    backend: &EtcdBackend,
    lease: &Arc<Lease>,
    key: &str,
    revision: Option<i64>,
) -> Result<(), Error> {
    let compare = if let Some(revision) = revision {
        Compare::create_revision(key, CompareOp::Equal, revision)
    } else {
        backend.0.lease.retire(lease);
        Compare::lease(key, CompareOp::Equal, lease.id)
    };
    let attempts = AtomicU32::new(0);
    let response = backend
        .call("a release", |mut client| {
            attempts.fetch_add(1, Ordering::Relaxed);
            let txn = Txn::new()
                .when([compare.clone()])
                .and_then([TxnOp::delete(key, None)]);
            async move { client.txn(txn).await }
        })
        .await;
    match response {
        Ok(response) => {
            if revision.is_some() {
                lease.unclaim(key);
            }
            if response.succeeded()
                || revision.is_none()
                || (attempts.load(Ordering::Relaxed) > 1 && !lease.state.is_lost())
            {
                Ok(())
            } else {
                Err(Error::Lost)
            }
        }
        Err(error) => {
            backend.0.lease.retire(lease);
            Err(error)
        }
    }
}

/// A held key: its key on the client's lease (deleted on release or drop) and its create
/// revision.
struct EtcdHeld {
    token: FencingToken,
    pending: Pending,
}

impl Hold for EtcdHeld {
    fn token(&self) -> FencingToken {
        self.token
    }

    fn is_lost(&self) -> bool {
        self.pending.lease.state.is_lost()
    }

    fn lost(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.pending.lease.state.lost())
    }

    /// Deletes the key on a task of its own, so that the lock is released even if the caller
    /// stops waiting for the outcome.
    fn release(self: Box<Self>) -> BoxFuture<'static, Result<(), Error>> {
        let Self { mut pending, .. } = *self;
        let runtime = pending.backend.0.runtime.clone();
        let task = runtime.spawn(async move {
            let lost = pending.lease.state.is_lost();
            let deleted = pending.delete().await;
            if lost { Err(Error::Lost) } else { deleted }
        });
        Box::pin(async move { task.await.unwrap_or(Err(Error::Lost)) })
    }
}
