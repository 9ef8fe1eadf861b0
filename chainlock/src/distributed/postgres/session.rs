//! One server session and its driver task: heartbeats, and the loss of the session as a
//! function of the clock.
//!
//! A session is lost when its connection ends, when a heartbeat goes unanswered, or — whatever
//! the tasks of the process could or could not run — once its last confirmed contact with the
//! server is [`PostgresOptions::loss_after`] old. The server is told (`idle_session_timeout`)
//! to end a session only [`PostgresOptions::server_release_after`] after its last request,
//! which is later, so a guard says "lost" before anyone else can get its lock. Loss is sticky:
//! once seen, it stays, and the driver closes the connection.
//!
//! The driver also hands the notifications the server sends the session (to a `LISTEN` of
//! it) to whoever [listens](Session::notifications).

use super::options::{Connection, PostgresOptions};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};
use tokio::task::AbortHandle;
use tokio_postgres::{AsyncMessage, Client, Notification};

/// What the driver, the pool and the guard know about a session's life.
pub(super) struct Liveness {
    /// The origin of `last_contact`.
    base: Instant,
    /// Nanoseconds after `base` at which the last request the server answered was sent.
    last_contact: AtomicU64,
    loss_after: Duration,
    /// Becomes `true` once, when the session is lost.
    lost: watch::Sender<bool>,
    /// Set when a heartbeat went unanswered within its timeout (the driver then closed the
    /// session): statements that failed with it failed because the server did not answer.
    unanswered: AtomicBool,
}

impl Liveness {
    fn new(loss_after: Duration) -> Self {
        Self {
            base: Instant::now(),
            last_contact: AtomicU64::new(0),
            loss_after,
            lost: watch::channel(false).0,
            unanswered: AtomicBool::new(false),
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Records that the server answered a request sent at `sent`.
    pub(super) fn contact(&self, sent: Instant) {
        self.last_contact
            .fetch_max(self.nanos(sent), Ordering::AcqRel);
    }

    /// The instant at which a silence becomes a loss.
    fn deadline(&self) -> Instant {
        self.base
            + Duration::from_nanos(self.last_contact.load(Ordering::Acquire))
            + self.loss_after
    }

    /// Whether the last confirmed contact is older than the loss bound.
    pub(super) fn is_stale(&self) -> bool {
        Instant::now() >= self.deadline()
    }

    /// Whether the session was closed because a heartbeat went unanswered.
    pub(super) fn unanswered(&self) -> bool {
        self.unanswered.load(Ordering::Acquire)
    }

    pub(super) fn mark_lost(&self) {
        self.lost
            .send_if_modified(|lost| !std::mem::replace(lost, true));
    }

    /// Whether the session is lost; a silence past the bound is recorded as a loss.
    pub(super) fn is_lost(&self) -> bool {
        if *self.lost.borrow() {
            return true;
        }
        if self.is_stale() {
            self.mark_lost();
            return true;
        }
        false
    }

    /// Completes once [`Self::is_lost`] is true.
    pub(super) async fn lost(&self) {
        let mut lost = self.lost.subscribe();
        while !self.is_lost() {
            let deadline = tokio::time::Instant::from_std(self.deadline());
            tokio::select! {
                _ = lost.wait_for(|lost| *lost) => {}
                () = tokio::time::sleep_until(deadline) => {}
            }
        }
    }
}

/// A connection and its driver task; dropping it closes the connection.
pub(super) struct Session {
    pub(super) client: Arc<Client>,
    /// Set while a statement of ours may wait on the server (heartbeats would queue behind it,
    /// and the server does not count a running statement as idle).
    pub(super) busy: Arc<AtomicBool>,
    pub(super) liveness: Arc<Liveness>,
    /// The notifications the server sent the session, as the driver reads them.
    notifications: broadcast::Sender<Notification>,
    driver: AbortHandle,
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closes the socket; the server releases everything the session held.
        self.driver.abort();
    }
}

impl Session {
    /// Spawns the driver of a freshly connected session on `runtime`.
    ///
    /// The driver keeps `place` (the connection's place in its client's bound, opaque here)
    /// for as long as it owns the connection and drops it once the connection is closed,
    /// however that happens, even while guards still refer to the lost session.
    pub(super) fn start<P: Send + 'static>(
        client: Client,
        connection: Connection,
        options: &PostgresOptions,
        runtime: &tokio::runtime::Handle,
        place: P,
    ) -> Self {
        let client = Arc::new(client);
        let busy = Arc::new(AtomicBool::new(false));
        let liveness = Arc::new(Liveness::new(options.loss_after()));
        let notifications = broadcast::channel(NOTIFICATIONS_KEPT).0;
        let driver = runtime
            .spawn(drive(
                serve(connection, Some(notifications.clone())),
                Arc::downgrade(&client),
                Arc::clone(&busy),
                LostOnDrop(Arc::clone(&liveness)),
                options.heartbeat_interval,
                options.heartbeat_timeout,
                place,
            ))
            .abort_handle();
        Self {
            client,
            busy,
            liveness,
            notifications,
            driver,
        }
    }

    /// The notifications the server sends this session from now on (for the channels it
    /// `LISTEN`s to): a receiver that falls more than a few behind is told it lagged
    /// ([`broadcast::error::RecvError::Lagged`]), and keeps the latest.
    pub(super) fn notifications(&self) -> broadcast::Receiver<Notification> {
        self.notifications.subscribe()
    }

    /// Marks the session lost and closes its connection now, whoever still refers to it: the
    /// server then releases every lock it held.
    pub(super) fn close(&self) {
        self.liveness.mark_lost();
        self.driver.abort();
    }

    /// One empty round trip, bounded by `limit`; records the contact.
    pub(super) async fn ping(&self, limit: Duration) -> Result<(), Elapsed> {
        let sent = Instant::now();
        match tokio::time::timeout(limit, self.client.simple_query("")).await {
            Ok(Ok(_)) => {
                self.liveness.contact(sent);
                Ok(())
            }
            Ok(Err(_)) | Err(_) => Err(Elapsed),
        }
    }
}

/// A ping failed or timed out.
pub(super) struct Elapsed;

/// Marks its session lost when dropped: when the driver ends, is aborted, or is dropped with
/// its runtime.
struct LostOnDrop(Arc<Liveness>);

impl Drop for LostOnDrop {
    fn drop(&mut self) {
        self.0.mark_lost();
    }
}

/// Sets `busy` for the life of a statement that may wait, clearing it however that ends.
pub(super) struct Busy(Arc<AtomicBool>);

impl Busy {
    pub(super) fn set(flag: &Arc<AtomicBool>) -> Self {
        flag.store(true, Ordering::Release);
        Self(Arc::clone(flag))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// How many notifications a session keeps for a listener that has not read them yet.
const NOTIFICATIONS_KEPT: usize = 8;

/// Polls `connection` (which sends our statements and reads their answers) until it ends,
/// handing every notification to `notifications`' receivers, if any. Notices are dropped:
/// none of our statements raises one that anyone reads.
pub(super) async fn serve(
    mut connection: Connection,
    notifications: Option<broadcast::Sender<Notification>>,
) -> Result<(), tokio_postgres::Error> {
    std::future::poll_fn(|cx| {
        loop {
            match connection.poll_message(cx) {
                Poll::Ready(Some(Ok(AsyncMessage::Notification(notification)))) => {
                    if let Some(notifications) = &notifications {
                        // No receiver: nobody listens now.
                        notifications.send(notification).ok();
                    }
                }
                Poll::Ready(Some(Ok(_))) => {}
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Err(error)),
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await
}

/// Polls the connection and sends heartbeats until the session is lost.
async fn drive<F, P>(
    connection: F,
    client: Weak<Client>,
    busy: Arc<AtomicBool>,
    liveness: LostOnDrop,
    interval: Duration,
    timeout: Duration,
    place: P,
) where
    F: Future<Output = Result<(), tokio_postgres::Error>>,
{
    let heartbeat = async {
        loop {
            tokio::time::sleep(interval).await;
            if busy.load(Ordering::Acquire) {
                continue;
            }
            // A process paused (or a runtime blocked) past the bound: the server may have
            // released the session's lock, so it is lost even if the server still answers.
            if liveness.0.is_lost() {
                return;
            }
            let Some(client) = client.upgrade() else {
                return;
            };
            let sent = Instant::now();
            match tokio::time::timeout(timeout, client.simple_query("")).await {
                Ok(Ok(_)) => liveness.0.contact(sent),
                // An acquisition started after our `busy` check: the heartbeat queued behind
                // its lock wait, which proves nothing about the connection.
                Err(_) if busy.load(Ordering::Acquire) => {}
                Err(_) => {
                    liveness.0.unanswered.store(true, Ordering::Release);
                    return;
                }
                Ok(Err(_)) => return,
            }
        }
    };
    tokio::select! {
        _ = connection => {}
        () = heartbeat => {}
    }
    // `liveness` drops here and marks the session lost; then `place` is freed.
    drop(liveness);
    drop(place);
}
