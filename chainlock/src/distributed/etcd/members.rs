//! The cluster's members as this client sees them: a connection of its own to each endpoint,
//! and a judgement of each member's health, so that requests and streams go to members that
//! answer.
//!
//! Why: the client crate balances one channel over every endpoint, picking at random, and a
//! stopped process (`SIGSTOP`, a hung disk) still completes TCP handshakes, so its connection
//! looks alive while nothing comes back. Here:
//!
//! - Requests go to the **current** member while it is healthy, and to the next healthy one
//!   otherwise. A member is judged **unhealthy** when an attempt on it times out or fails in a
//!   way that asking again may cure (closed connection, no leader); one attempt waits at most
//!   [`EtcdOptions::attempt_timeout`](crate::distributed::EtcdOptions::attempt_timeout) (500 ms by
//!   default) while another member is healthy, and the request is asked of that member at
//!   once.
//! - A **prober** asks every member for its status every
//!   [`EtcdOptions::probe_interval`](crate::distributed::EtcdOptions::probe_interval) (1 s by default),
//!   within the attempt timeout, and judges it by the answer: healthy if it answers and knows
//!   a leader. So a member that hangs is found even when no request goes to it (a waiter's
//!   watch, a keep-alive stream), and a member that comes back is used again.
//! - Streams (keep-alives, watches) note how often their member was judged unhealthy when
//!   they opened, and move to a healthy member as soon as it is judged unhealthy again
//!   ([`Member::trouble_since`]).

use super::super::Error;
use super::retry::{deadline_in, refusal, transient};
use etcd_client::{Client, ConnectOptions};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{OnceLock, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// One member: its endpoint, its connection once made, and its health.
pub(super) struct Member {
    endpoint: String,
    /// A client of this endpoint alone, once connected (authenticated, with a user).
    client: OnceLock<Client>,
    healthy: AtomicBool,
    /// How many times the member was judged unhealthy.
    failures: AtomicU64,
    /// Notified at every failure.
    failed: Notify,
}

impl Member {
    fn new(endpoint: String) -> Self {
        Self {
            endpoint,
            client: OnceLock::new(),
            healthy: AtomicBool::new(false),
            failures: AtomicU64::new(0),
            failed: Notify::new(),
        }
    }

    fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire) && self.client.get().is_some()
    }

    /// How the member is judged now (`Debug`, telemetry).
    fn judgement(&self) -> Judgement {
        if self.is_healthy() {
            Judgement::Healthy
        } else if self.client.get().is_none() {
            Judgement::NotConnected
        } else {
            Judgement::Unhealthy
        }
    }

    /// The member answered.
    pub(super) fn answered(&self) {
        self.healthy.store(true, Ordering::Release);
    }

    /// An attempt on the member timed out or failed in a way that asking again may cure.
    pub(super) fn failed(&self) {
        self.healthy.store(false, Ordering::Release);
        self.failures.fetch_add(1, Ordering::AcqRel);
        self.failed.notify_waiters();
    }

    /// How many times the member was judged unhealthy so far (for [`Self::trouble_since`]).
    pub(super) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Acquire)
    }

    /// Completes once the member was judged unhealthy more than `failures` times.
    pub(super) async fn trouble_since(&self, failures: u64) {
        loop {
            let notified = self.failed.notified();
            if self.failures() > failures {
                return;
            }
            notified.await;
        }
    }
}

/// How a member is judged: [`Member::judgement`].
enum Judgement {
    Healthy,
    Unhealthy,
    NotConnected,
}

/// Every member of the cluster, the current one, and the bounds of an attempt.
pub(super) struct Members {
    list: Vec<Member>,
    /// The member requests go to while it is healthy.
    current: AtomicUsize,
    /// The longest attempt on one member while another is healthy.
    attempt: Duration,
}

impl fmt::Debug for Members {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.list.iter().map(|member| {
                let state = match member.judgement() {
                    Judgement::Healthy => "healthy",
                    Judgement::Unhealthy => "unhealthy",
                    Judgement::NotConnected => "not connected",
                };
                (&member.endpoint, state)
            }))
            .finish()
    }
}

/// What [`telemetry::live`](crate::telemetry::live) shows of this client's members: the
/// judgement `Debug` prints, and how often each member was judged unhealthy.
#[cfg(feature = "telemetry")]
impl crate::telemetry::endpoints::EndpointSource for Members {
    fn endpoints(&self, out: &mut Vec<crate::telemetry::Endpoint>) {
        use crate::telemetry::EndpointState;
        out.extend(self.list.iter().map(|member| crate::telemetry::Endpoint {
            backend: "etcd",
            address: member.endpoint.clone(),
            state: match member.judgement() {
                Judgement::Healthy => EndpointState::Healthy,
                Judgement::Unhealthy => EndpointState::Unhealthy,
                Judgement::NotConnected => EndpointState::NotConnected,
            },
            judged_unhealthy: member.failures(),
        }));
    }
}

impl Members {
    pub(super) fn new(endpoints: Vec<String>, attempt: Duration) -> Self {
        Self {
            list: endpoints.into_iter().map(Member::new).collect(),
            current: AtomicUsize::new(0),
            attempt,
        }
    }

    pub(super) fn member(&self, index: usize) -> &Member {
        &self.list[index]
    }

    /// The member to ask now and its client: the current member if it is healthy, else the
    /// next healthy one (which becomes current), else the next connected one (round robin:
    /// with no member healthy, retries go around them all). `None` if none is connected.
    pub(super) fn pick(&self) -> Option<(usize, Client)> {
        let n = self.list.len();
        let current = self.current.load(Ordering::Acquire) % n;
        if self.list[current].is_healthy() {
            return self.list[current]
                .client
                .get()
                .map(|c| (current, c.clone()));
        }
        let next = (1..=n)
            .map(|step| (current + step) % n)
            .find(|&i| self.list[i].is_healthy())
            .or_else(|| {
                (1..=n)
                    .map(|step| (current + step) % n)
                    .find(|&i| self.list[i].client.get().is_some())
            })?;
        self.current.store(next, Ordering::Release);
        self.list[next].client.get().map(|c| (next, c.clone()))
    }

    /// How long an attempt on member `index` may wait: the attempt timeout while another
    /// member is healthy (the request moves there), else `otherwise`.
    pub(super) fn attempt_bound(&self, index: usize, otherwise: Duration) -> Duration {
        let another = self
            .list
            .iter()
            .enumerate()
            .any(|(i, member)| i != index && member.is_healthy());
        if another {
            self.attempt.min(otherwise)
        } else {
            otherwise
        }
    }

    /// Whether any member is healthy now.
    pub(super) fn any_healthy(&self) -> bool {
        self.list.iter().any(Member::is_healthy)
    }

    /// Makes member `index` the current one (it answered first).
    pub(super) fn prefer(&self, index: usize) {
        self.current.store(index, Ordering::Release);
    }

    pub(super) fn len(&self) -> usize {
        self.list.len()
    }
}

/// Connects to member `index` if it has no client yet, and asks for its status, within
/// `limit`: `Ok` if it answered and knows a leader (then judged healthy), else the error
/// (then judged unhealthy, unless the error is not the member's: an invalid endpoint).
pub(super) async fn probe(
    members: &Members,
    index: usize,
    connect: &ConnectOptions,
    limit: Duration,
) -> Result<(), Error> {
    let member = members.member(index);
    let unresponsive = Error::EtcdUnresponsive {
        operation: "connect",
        after: limit,
    };
    let deadline = deadline_in(limit);
    let client = if let Some(client) = member.client.get() {
        client.clone()
    } else {
        let connected = tokio::time::timeout_at(
            deadline,
            Client::connect([member.endpoint.as_str()], Some(connect.clone())),
        )
        .await;
        match connected {
            Ok(Ok(client)) => member.client.get_or_init(|| client).clone(),
            Ok(Err(error)) => {
                member.failed();
                return Err(refusal(&error).unwrap_or(Error::Etcd(error)));
            }
            Err(_) => {
                member.failed();
                return Err(unresponsive);
            }
        }
    };
    let mut client = client;
    match tokio::time::timeout_at(deadline, client.status()).await {
        Ok(Ok(status)) if status.leader() != 0 => {
            member.answered();
            Ok(())
        }
        Ok(Err(error)) => {
            if let Some(refused) = refusal(&error) {
                member.failed();
                return Err(refused);
            }
            if transient(&error) {
                member.failed();
                return Err(Error::Etcd(error));
            }
            // The member answered (a user without the right to ask for its status, say).
            member.answered();
            Ok(())
        }
        // No answer in time, or a member that knows no leader.
        Ok(Ok(_)) | Err(_) => {
            member.failed();
            Err(unresponsive)
        }
    }
}

/// Probes every member every `every`, within the attempt timeout, until the members are
/// dropped.
pub(super) async fn watch_over(members: Weak<Members>, connect: ConnectOptions, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(strong) = members.upgrade() else {
            return;
        };
        let mut probes = tokio::task::JoinSet::new();
        for index in 0..strong.len() {
            let (members, connect) = (std::sync::Arc::clone(&strong), connect.clone());
            probes.spawn(async move {
                let limit = members.attempt;
                probe(&members, index, &connect, limit).await.ok();
            });
        }
        drop(strong);
        while probes.join_next().await.is_some() {}
    }
}

/// Whether `error` is one that connecting to another member cannot cure either (refused
/// credentials or certificate, an invalid endpoint).
pub(super) fn is_final(error: &Error) -> bool {
    match error {
        Error::EtcdUnresponsive { .. } => false,
        Error::Etcd(error) => !transient(error),
        _ => true,
    }
}
