//! etcd's lock protocol: a key under the name, put if absent with the hold's lease, owned
//! by create revision (FIFO), each waiter watching its predecessor.

use super::super::backend::{Mode, Wait};
use super::super::{Error, FencingToken, LockKey};
use super::keys::{Keys, Role};
use super::{EtcdBackend, EtcdHeld, Pending};
use etcd_client::{
    Compare, CompareOp, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse, WatchOptions,
};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The create revisions an acquisition's put read: its own key's, and the earliest key's of the
/// name (if any).
struct Revisions {
    own: i64,
    first: Option<i64>,
}

/// How a wait for a turn ended.
enum Turn {
    /// No conflicting key created before ours is left: held.
    Held,
    /// The wait's deadline passed first.
    TimedOut,
    /// The lease was lost while waiting (the key goes with it): queue again.
    LeaseLost,
}

impl EtcdBackend {
    /// Acquires `key` in `mode` on the client's lease. A waiter whose lease is lost (the
    /// cluster did not confirm a keep-alive in time) queues again under the client's next lease,
    /// behind every key present then; it fails only if no lease can be granted within
    /// `request_timeout` ([`Error::EtcdUnresponsive`]).
    pub(super) async fn acquire(
        &self,
        key: LockKey<'_>,
        mode: Mode,
        wait: Wait,
    ) -> Result<Option<EtcdHeld>, Error> {
        self.acquire_as(&Keys::new(key), Role::Hold(mode), b"", wait)
            .await
    }

    /// [`acquire`](Self::acquire) of a key in `role` (a hold, or a candidacy) with `value`.
    pub(super) async fn acquire_as(
        &self,
        keys: &Keys,
        role: Role,
        value: &[u8],
        wait: Wait,
    ) -> Result<Option<EtcdHeld>, Error> {
        let mode = role.mode();
        loop {
            let lease = self.0.lease.get(self).await?;
            let mut pending = Pending {
                key: lease.claim(keys, role),
                lease,
                revision: None,
                backend: self.clone(),
            };
            let revision = self.put(keys, &pending, value).await?;
            pending.revision = Some(revision.own);
            let held = match revision.first {
                Some(first) if first == revision.own => true,
                _ if mode == Mode::Shared => {
                    self.predecessor(keys, revision.own, mode).await?.is_none()
                }
                _ => false,
            };
            let turn = if held {
                Turn::Held
            } else if matches!(wait, Wait::Never) {
                Turn::TimedOut
            } else {
                self.wait_for_turn(keys, &pending, mode, wait).await?
            };
            match turn {
                Turn::Held if !pending.lease.state.is_lost() => {
                    return Ok(Some(EtcdHeld {
                        token: FencingToken::new(revision.own.cast_unsigned()),
                        pending,
                    }));
                }
                // Lost after its turn came, before this returned: queue again as well.
                Turn::Held | Turn::LeaseLost => {}
                Turn::TimedOut => {
                    // Deleted before this returns, so a `try_lock` leaves nothing behind.
                    pending.delete().await.ok();
                    return Ok(None);
                }
            }
        }
    }

    /// Puts `pending`'s key with its lease if absent, reading the earliest key of the name (one
    /// round trip): the key's create revision (the put's, or that of an earlier attempt of this
    /// very put whose answer was lost) and the earliest one's.
    async fn put(&self, keys: &Keys, pending: &Pending, value: &[u8]) -> Result<Revisions, Error> {
        let (own, prefix, id) = (&pending.key, keys.range(), pending.lease.id);
        let attempts = AtomicU32::new(0);
        let response = self
            .call("an acquisition", |mut client| {
                attempts.fetch_add(1, Ordering::Relaxed);
                let (own, prefix) = (own.clone(), prefix.to_owned());
                async move {
                    let earliest = GetOptions::new()
                        .with_prefix()
                        .with_keys_only()
                        .with_sort(SortTarget::Create, SortOrder::Ascend)
                        .with_limit(1);
                    let txn = Txn::new()
                        .when([Compare::create_revision(own.clone(), CompareOp::Equal, 0)])
                        .and_then([
                            TxnOp::put(own.clone(), value, Some(PutOptions::new().with_lease(id))),
                            TxnOp::get(prefix.clone(), Some(earliest.clone())),
                        ])
                        .or_else([TxnOp::get(own, None), TxnOp::get(prefix, Some(earliest))]);
                    client.txn(txn).await
                }
            })
            .await;
        if attempts.load(Ordering::Relaxed) > 1 {
            // An attempt went unanswered: it may still land, after this key's delete.
            self.0.lease.retire(&pending.lease);
        }
        let response = response?;
        let ops = response.op_responses();
        let own = if response.succeeded() {
            response
                .header()
                .map_or(0, etcd_client::ResponseHeader::revision)
        } else {
            match ops.first() {
                Some(TxnOpResponse::Get(get)) => get
                    .kvs()
                    .first()
                    .map_or(0, etcd_client::KeyValue::create_revision),
                _ => 0,
            }
        };
        if own <= 0 {
            return Err(Error::Lost);
        }
        let first = match ops.get(1) {
            Some(TxnOpResponse::Get(get)) => get
                .kvs()
                .first()
                .map(etcd_client::KeyValue::create_revision),
            _ => None,
        };
        Ok(Revisions { own, first })
    }

    /// The last key in the name's range created before `revision` that conflicts with `mode`
    /// (any key for an exclusive hold, a key that is not a shared hold of the name for a shared
    /// one), with the revision
    /// of the read.
    async fn predecessor(
        &self,
        keys: &Keys,
        revision: i64,
        mode: Mode,
    ) -> Result<Option<(Vec<u8>, i64)>, Error> {
        let response = self
            .call("a read of the queue", |mut client| {
                let prefix = keys.range().to_owned();
                async move {
                    let mut options = GetOptions::new()
                        .with_prefix()
                        .with_keys_only()
                        .with_max_create_revision(revision - 1)
                        .with_sort(SortTarget::Create, SortOrder::Descend);
                    if mode == Mode::Exclusive {
                        options = options.with_limit(1);
                    }
                    client.get(prefix, Some(options)).await
                }
            })
            .await?;
        let at = response
            .header()
            .map_or(0, etcd_client::ResponseHeader::revision);
        Ok(response
            .kvs()
            .iter()
            .find(|kv| mode == Mode::Exclusive || !keys.is_shared(kv.key()))
            .map(|kv| (kv.key().to_vec(), at)))
    }

    /// Waits until no key that conflicts with `pending`'s and was created before it is left,
    /// the wait's deadline passes, or `pending`'s lease is lost.
    async fn wait_for_turn(
        &self,
        keys: &Keys,
        pending: &Pending,
        mode: Mode,
        wait: Wait,
    ) -> Result<Turn, Error> {
        let (own, lease) = (pending.key.as_str(), &pending.lease);
        let revision = pending.revision.expect("a queued key has its revision");
        let deadline = wait.deadline().map(tokio::time::Instant::from_std);
        let expired = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(expired);
        loop {
            if lease.state.is_lost() {
                return Ok(Turn::LeaseLost);
            }
            let Some((key, at)) = self.predecessor(keys, revision, mode).await? else {
                break;
            };
            let (mut watch, index) = self
                .call_on("a watch", |mut client| {
                    let key = key.clone();
                    async move {
                        client
                            .watch(key, Some(WatchOptions::new().with_start_revision(at + 1)))
                            .await
                    }
                })
                .await?;
            // Until the predecessor's delete, our lease's loss, the deadline, or the watch's
            // member judged unhealthy (a member that hangs sends no event: the watch moves).
            let member = self.0.members.member(index);
            let failures = member.failures();
            let mut trouble = false;
            loop {
                tokio::select! {
                    () = &mut expired => return Ok(Turn::TimedOut),
                    () = lease.state.lost() => break,
                    () = member.trouble_since(failures) => {
                        trouble = true;
                        break;
                    }
                    message = watch.message() => {
                        let Ok(Some(response)) = message else {
                            trouble = true;
                            break;
                        };
                        if response.canceled() {
                            trouble = true;
                            break;
                        }
                        if response
                            .events()
                            .iter()
                            .any(|event| event.event_type() == EventType::Delete)
                        {
                            break;
                        }
                    }
                }
            }
            if trouble && !self.0.members.any_healthy() {
                // The stream broke (a member died) and no member is judged healthy: look
                // again after a short pause, within the deadline.
                tokio::select! {
                    () = &mut expired => return Ok(Turn::TimedOut),
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        }
        // As Go's Mutex: make sure our key (hence our lease) is still there.
        if lease.state.is_lost() {
            return Ok(Turn::LeaseLost);
        }
        let response = self
            .call("a read of the own key", |mut client| {
                let own = own.to_owned();
                async move {
                    client
                        .get(own, Some(GetOptions::new().with_keys_only()))
                        .await
                }
            })
            .await?;
        match response.kvs().first() {
            Some(kv) if kv.create_revision() == revision => Ok(Turn::Held),
            _ if lease.state.is_lost() => Ok(Turn::LeaseLost),
            // Someone deleted our key (`etcdctl del`): nothing of ours is queued any more.
            _ => Err(Error::Lost),
        }
    }
}
