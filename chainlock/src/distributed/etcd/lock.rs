//! etcd's lock protocol: a key under the name, put if absent with the hold's lease, owned
//! by create revision (FIFO), each waiter watching its predecessor.

use super::super::backend::{Mode, Wait};
use super::super::{Error, FencingToken, LockKey};
use super::keys::Keys;
use super::lease::Lease;
use super::{EtcdBackend, EtcdHeld};
use etcd_client::{
    Compare, CompareOp, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse, WatchOptions,
};
use std::time::{Duration, Instant};

impl EtcdBackend {
    pub(super) async fn acquire(
        &self,
        key: LockKey<'_>,
        mode: Mode,
        wait: Wait,
    ) -> Result<Option<EtcdHeld>, Error> {
        let ttl = self.0.options.ttl;
        let sent = Instant::now();
        let grant = self
            .call("a lease grant", |mut client| async move {
                client.lease_grant(ttl.as_secs().cast_signed(), None).await
            })
            .await?;
        if grant.ttl() <= 0 {
            return Err(Error::EtcdUnresponsive {
                operation: "a lease grant",
                after: self.0.options.request_timeout,
            });
        }
        let lease = Lease::start(
            self,
            grant.id(),
            sent,
            Duration::from_secs(grant.ttl().cast_unsigned()),
        );
        let keys = Keys::new(key);
        let own = keys.own(mode, grant.id());
        let prefix = keys.range().to_owned();
        let id = grant.id();
        let response = self
            .call("an acquisition", |mut client| {
                let (own, prefix) = (own.clone(), prefix.clone());
                async move {
                    let earliest = GetOptions::new()
                        .with_prefix()
                        .with_keys_only()
                        .with_sort(SortTarget::Create, SortOrder::Ascend)
                        .with_limit(1);
                    let txn = Txn::new()
                        .when([Compare::create_revision(own.clone(), CompareOp::Equal, 0)])
                        .and_then([
                            TxnOp::put(own.clone(), "", Some(PutOptions::new().with_lease(id))),
                            TxnOp::get(prefix.clone(), Some(earliest.clone())),
                        ])
                        .or_else([TxnOp::get(own, None), TxnOp::get(prefix, Some(earliest))]);
                    client.txn(txn).await
                }
            })
            .await?;
        let ops = response.op_responses();
        let revision = if response.succeeded() {
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
        if revision <= 0 {
            return Err(Error::Lost);
        }
        let first = match ops.get(1) {
            Some(TxnOpResponse::Get(get)) => get
                .kvs()
                .first()
                .map(etcd_client::KeyValue::create_revision),
            _ => None,
        };
        // Uncontended: our key is the earliest under the prefix (one round trip).
        let mut held = first == Some(revision);
        if !held && mode == Mode::Shared {
            held = self.predecessor(&keys, revision, mode).await?.is_none();
        }
        if !held {
            if matches!(wait, Wait::Never) {
                lease.revoke(self).await.ok();
                return Ok(None);
            }
            let turn = self
                .wait_for_turn(&keys, &own, revision, mode, wait, &lease)
                .await?;
            if !turn {
                lease.revoke(self).await.ok();
                return Ok(None);
            }
        }
        Ok(Some(EtcdHeld {
            lease: Some(lease),
            token: FencingToken::new(revision.cast_unsigned()),
            backend: self.clone(),
        }))
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

    /// Waits until no conflicting key created before `revision` is left: `true`, or `false`
    /// once the wait's deadline passed.
    async fn wait_for_turn(
        &self,
        keys: &Keys,
        own: &str,
        revision: i64,
        mode: Mode,
        wait: Wait,
        lease: &Lease,
    ) -> Result<bool, Error> {
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
                return Err(Error::EtcdUnresponsive {
                    operation: "keeping a waiter's lease alive",
                    after: lease.state.ttl,
                });
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
                    () = &mut expired => return Ok(false),
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
                    () = &mut expired => return Ok(false),
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        }
        // As Go's Mutex: make sure our key (hence our lease) is still there.
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
            Some(kv) if kv.create_revision() == revision => Ok(true),
            _ => Err(Error::Lost),
        }
    }
}
