//! etcd's own leader election (Go's `concurrency.Election`, the one `etcdctl elect` runs), on
//! the client's lease and the lock's protocol:
//!
//! - **Campaign**: the candidacy's key `NAME/<lease id in hex>` is put with the client's lease
//!   and the candidate's value, if absent (a client's further candidacies of a name at once:
//!   `NAME/l<lease>-<n>`, `keys.rs`); the candidacy leads once no key under `NAME/` has a
//!   lower create revision, waiting for the delete of its predecessor as the lock's waiters
//!   do (`lock.rs`: FIFO, no polling, queueing again under the next lease if its lease is
//!   lost). The token is the candidacy's create revision.
//! - **Proclaim**: the key is put again with the new value in a transaction compared on its
//!   create revision; a failed compare means the key is gone: the leadership is lost.
//! - **Resign**: the key is deleted in a transaction compared on its create revision (a drop:
//!   on a background task).
//! - **Leader**: the key under `NAME/` with the lowest create revision, its value and create
//!   revision (`Election.Leader`).
//! - **Observe**: as `Election.Observe`: the leader now, then a watch of its key from the next
//!   revision (a put is a proclamation, a delete ends its leadership: read again); with no
//!   leader, a watch of the prefix for the first put.
//!
//! So chainlock, `etcdctl elect NAME VALUE`, `etcdctl elect -l NAME` and Go's Election
//! campaign against and observe each other.

use super::keys::{Keys, Role};
use super::{EtcdBackend, EtcdHeld};
use crate::distributed::backend::{BoxFuture, Hold, Leading, Wait};
use crate::distributed::election::leader::{Leader, Publisher};
use crate::distributed::{Error, FencingToken, LockKey};
use etcd_client::{
    Compare, CompareOp, EventType, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget, Txn,
    TxnOp, WatchOptions,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// A leading candidacy: its key on the client's lease, and whether a proclamation found the
/// key gone.
pub(super) struct EtcdLeading {
    held: EtcdHeld,
    deposed: AtomicBool,
    changed: Notify,
}

impl EtcdLeading {
    fn depose(&self) {
        if !self.deposed.swap(true, Ordering::AcqRel) {
            self.changed.notify_waiters();
        }
    }
}

impl Hold for EtcdLeading {
    fn token(&self) -> FencingToken {
        self.held.token
    }

    fn is_lost(&self) -> bool {
        self.deposed.load(Ordering::Acquire) || self.held.is_lost()
    }

    fn lost(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let deposed = async {
                loop {
                    let notified = self.changed.notified();
                    if self.deposed.load(Ordering::Acquire) {
                        return;
                    }
                    notified.await;
                }
            };
            tokio::select! {
                () = deposed => {}
                () = self.held.lost() => {}
            }
        })
    }

    fn release(self: Box<Self>) -> BoxFuture<'static, Result<(), Error>> {
        let Self { held, deposed, .. } = *self;
        let released = Box::new(held).release();
        Box::pin(async move {
            let released = released.await;
            if deposed.load(Ordering::Acquire) {
                Err(Error::Lost)
            } else {
                released
            }
        })
    }
}

impl Leading for EtcdLeading {
    fn proclaim<'a>(&'a self, value: &'a [u8]) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let pending = &self.held.pending;
            let (key, lease) = (pending.key.as_str(), pending.lease.id);
            let revision = self.held.token.get().cast_signed();
            let response = pending
                .backend
                .call("a proclamation", |mut client| {
                    let txn = Txn::new()
                        .when([Compare::create_revision(key, CompareOp::Equal, revision)])
                        .and_then([TxnOp::put(
                            key,
                            value,
                            Some(PutOptions::new().with_lease(lease)),
                        )]);
                    async move { client.txn(txn).await }
                })
                .await?;
            if response.succeeded() && !self.held.is_lost() {
                Ok(())
            } else {
                self.depose();
                Err(Error::Lost)
            }
        })
    }
}

/// `NAME/`, read for its earliest key (the leader), as Go's `WithFirstCreate`.
fn first_created() -> GetOptions {
    GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_limit(1)
}

fn leader_of(kv: &KeyValue) -> Leader {
    Leader {
        value: kv.value().to_vec(),
        token: FencingToken::new(kv.create_revision().cast_unsigned()),
    }
}

/// How long the observer waits before it asks again after a failure.
const OBSERVE_RETRY: Duration = Duration::from_millis(100);

impl EtcdBackend {
    /// Campaigns for `name` with `value` (see the module docs).
    pub(super) async fn campaign(
        &self,
        name: &str,
        value: &[u8],
        wait: Wait,
    ) -> Result<Option<EtcdLeading>, Error> {
        let keys = Keys::new(LockKey::Name(name));
        let held = self.acquire_as(&keys, Role::Candidate, value, wait).await?;
        Ok(held.map(|held| EtcdLeading {
            held,
            deposed: AtomicBool::new(false),
            changed: Notify::new(),
        }))
    }

    /// The leader of `name` now, with the revision of the read.
    async fn leader_at(&self, prefix: &str) -> Result<(Option<KeyValue>, i64), Error> {
        let response = self
            .call("a read of the leader", |mut client| {
                let prefix = prefix.to_owned();
                async move { client.get(prefix, Some(first_created())).await }
            })
            .await?;
        let at = response
            .header()
            .map_or(0, etcd_client::ResponseHeader::revision);
        Ok((response.kvs().first().cloned(), at))
    }

    /// The leader of `name` now.
    pub(super) async fn leader(&self, name: &str) -> Result<Option<Leader>, Error> {
        let keys = Keys::new(LockKey::Name(name));
        let (kv, _) = self.leader_at(keys.range()).await?;
        Ok(kv.as_ref().map(leader_of))
    }

    /// Publishes the leaders of `name` until `publisher` is closed (see the module docs).
    pub(super) async fn observe(self, name: String, mut publisher: Publisher) {
        let keys = Keys::new(LockKey::Name(&name));
        let prefix = keys.range();
        while !publisher.is_closed() {
            let followed = match self.leader_at(prefix).await {
                Ok((Some(kv), at)) => {
                    publisher.publish(Some(leader_of(&kv)));
                    Some((kv.key().to_vec(), at))
                }
                Ok((None, at)) => {
                    publisher.publish(None);
                    self.first_put(prefix, at, &mut publisher).await
                }
                Err(_) => None,
            };
            let kept_on = match followed {
                Some((key, at)) => self.follow(key, at, &mut publisher).await,
                None => false,
            };
            if !kept_on {
                tokio::select! {
                    () = publisher.closed() => return,
                    () = tokio::time::sleep(OBSERVE_RETRY) => {}
                }
            }
        }
    }

    /// Watches `prefix` after revision `at` (when it held no key) for the first put: the new
    /// leader, published; its key and the revision to follow it from. `None` if the watch
    /// failed or the publisher closed.
    async fn first_put(
        &self,
        prefix: &str,
        at: i64,
        publisher: &mut Publisher,
    ) -> Option<(Vec<u8>, i64)> {
        let options = WatchOptions::new()
            .with_prefix()
            .with_start_revision(at + 1);
        let (mut watch, index) = self
            .call_on("a watch", |mut client| {
                let (prefix, options) = (prefix.to_owned(), options.clone());
                async move { client.watch(prefix, Some(options)).await }
            })
            .await
            .ok()?;
        let member = self.0.members.member(index);
        let failures = member.failures();
        loop {
            tokio::select! {
                () = publisher.closed() => return None,
                () = member.trouble_since(failures) => return None,
                message = watch.message() => {
                    let response = message.ok()??;
                    if response.canceled() {
                        return None;
                    }
                    // Only a put makes a leader (a delete here was of a key put and deleted
                    // since `at`); events come in revision order.
                    let first = response
                        .events()
                        .iter()
                        .filter(|event| event.event_type() == EventType::Put)
                        .find_map(|event| event.kv());
                    if let Some(kv) = first {
                        publisher.publish(Some(leader_of(kv)));
                        return Some((kv.key().to_vec(), kv.mod_revision()));
                    }
                }
            }
        }
    }

    /// Follows the leader's `key` after revision `at`: a put is a proclamation (published), a
    /// delete ends the leadership. `true` once the key was deleted (read the next leader at
    /// once), `false` if the watch failed or the publisher closed.
    async fn follow(&self, key: Vec<u8>, at: i64, publisher: &mut Publisher) -> bool {
        let options = WatchOptions::new().with_start_revision(at + 1);
        let Ok((mut watch, index)) = self
            .call_on("a watch", |mut client| {
                let (key, options) = (key.clone(), options.clone());
                async move { client.watch(key, Some(options)).await }
            })
            .await
        else {
            return false;
        };
        let member = self.0.members.member(index);
        let failures = member.failures();
        loop {
            tokio::select! {
                () = publisher.closed() => return false,
                () = member.trouble_since(failures) => return false,
                message = watch.message() => {
                    let Ok(Some(response)) = message else {
                        return false;
                    };
                    if response.canceled() {
                        return false;
                    }
                    for event in response.events() {
                        match (event.event_type(), event.kv()) {
                            (EventType::Delete, _) => return true,
                            (EventType::Put, Some(kv)) => publisher.publish(Some(leader_of(kv))),
                            (EventType::Put, None) => {}
                        }
                    }
                }
            }
        }
    }
}
