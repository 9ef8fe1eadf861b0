//! The etcd backend: etcd's own lock algorithm (`go.etcd.io/etcd/client/v3/concurrency.Mutex`,
//! the one `etcdctl lock` runs), on a cluster that survives the loss of a minority of members.
//!
//! Protocol, per hold (both modes):
//! - A **lease** is granted with a TTL ([`EtcdOptions::ttl`], 10 s by default; never lease 0,
//!   which the server's own lock API silently turns into a 60 s lease nobody renews) and kept
//!   alive by a task of the hold, every TTL / 3, for as long as the hold waits or holds.
//! - The key `NAME/<lease id in lower-case hex>` (exclusive) or `NAME/r<lease id in hex>`
//!   (shared) is put with the lease in a transaction, if absent (the layout: `keys.rs`). An
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
//! - Every network call is bounded by [`EtcdOptions::request_timeout`] (retried on transient
//!   errors, such as a member that died, until then): [`Error::EtcdUnresponsive`]. A waiter's
//!   watch is bounded by its deadline and by its own lease: a waiter whose lease lapses (the
//!   cluster stopped answering) returns [`Error::EtcdUnresponsive`].
//! - **Members** (`members.rs`): a connection to each endpoint and a judgement of each
//!   member's health. A request goes to a healthy member; an attempt waits at most
//!   [`EtcdOptions::attempt_timeout`] while another member is healthy, then moves there (and
//!   the member is judged unhealthy); keep-alive streams and watches move off a member judged
//!   unhealthy; a prober asks every member every [`EtcdOptions::probe_interval`]. So a hung or
//!   cut-off minority member costs at most one attempt timeout, once, not a wait per request.
//! - Release revokes the lease (which deletes the key). A lease nobody revokes (a holder killed
//!   with `kill -9`) expires after its TTL and frees the name then.
//! - **Connecting** asks every member for its status at once and returns when the first
//!   answers (within the connect timeout), so
//!   that wrong credentials ([`Error::EtcdAuthentication`]), a certificate that does not verify
//!   (`Error::EtcdTls`, feature `etcd-tls`) and an unreachable cluster
//!   ([`Error::EtcdUnresponsive`]) show at [`LockClient::etcd_with`](crate::distributed::LockClient::etcd_with),
//!   not at the first lock. Neither a refused credential nor a refused certificate is retried.

mod connection;
mod keys;
mod lease;
mod lock;
mod members;
mod options;

use super::backend::{Backend, BoxFuture, Hold, Mode, Wait};
use super::{Error, FencingToken, LockKey};
use lease::{Lease, LeaseState};
use members::Members;
pub use options::EtcdOptions;
use std::fmt;
use std::sync::Arc;
use tokio::runtime::Handle;

struct Inner {
    members: Arc<Members>,
    options: EtcdOptions,
    runtime: Handle,
}

/// The etcd backend: a connection to each member, judged healthy or not, shared by every hold.
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
