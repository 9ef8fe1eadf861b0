//! Entering a room from async code: the same queues, with a waker instead of a
//! condition variable. Needs no particular runtime.

use super::queue::Registration;
use super::{OwnedRoomGuard, RoomGuard, Rooms};
use crate::telemetry::hooks::{Attempt, KeyRef, observe_async};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The future of [`Rooms::enter_async`]: resolves to a guard once in the room.
///
/// # Cancel safety
///
/// Dropping it before it resolves leaves no trace: a waiter withdraws from its queue, and
/// one that was admitted at that moment leaves the room again (running the exit action
/// on the dropping thread if it was the last occupant).
#[must_use = "futures do nothing unless polled"]
struct Enter<'a> {
    rooms: &'a Rooms,
    room: usize,
    step: Step,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Start,
    /// Registered in the room's queue with `batch`; the waker is stored under `key`.
    Waiting {
        batch: u64,
        key: u64,
    },
    Done,
}

impl Rooms {
    /// Enters `room` asynchronously: like [`Rooms::enter`], but the task yields instead
    /// of blocking the thread. For a deadline, see `try_enter_for_async` (feature
    /// `tokio`).
    ///
    /// It behaves as an `async fn`, except that the room index is checked at the call,
    /// before the future is first polled.
    ///
    /// # Panics
    ///
    /// If `room` is out of range (checked here, before the future is polled).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future before it resolves leaves no trace: a waiter
    /// withdraws from its queue, and one that was admitted at that moment leaves the room
    /// again (running the exit action on the dropping thread if it was the last occupant).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use chainlock::rooms::Rooms;
    /// use std::time::Duration;
    ///
    /// let rooms = Rooms::new(2);
    /// let held = rooms.enter_async(0).await;
    /// let waiting = tokio::time::timeout(Duration::from_millis(10), rooms.enter_async(1));
    /// assert!(waiting.await.is_err()); // timed out and withdrew
    /// drop(held);
    /// assert_eq!(rooms.enter_async(1).await.room(), 1);
    /// # }
    /// ```
    #[track_caller]
    #[cfg_attr(docsrs, doc(cfg(feature = "async")))]
    pub fn enter_async(&self, room: usize) -> impl Future<Output = RoomGuard<'_>> + Send + '_ {
        self.enter_checked(room)
    }

    /// Like [`Rooms::enter_async`], for a lock in an [`Arc`]: resolves to a guard that
    /// owns a reference to the lock, so that it can be held across `tokio::spawn`.
    ///
    /// # Panics
    ///
    /// If `room` is out of range (checked here, before the future is polled).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, like [`Rooms::enter_async`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use chainlock::rooms::Rooms;
    /// use std::sync::Arc;
    ///
    /// let rooms = Arc::new(Rooms::new(2));
    /// let guard = rooms.enter_owned_async(0).await;
    /// tokio::spawn(async move { drop(guard) }).await.unwrap();
    /// assert_eq!(rooms.current_room(), None);
    /// # }
    /// ```
    #[track_caller]
    #[cfg_attr(docsrs, doc(cfg(feature = "async")))]
    pub fn enter_owned_async(
        self: &Arc<Self>,
        room: usize,
    ) -> impl Future<Output = OwnedRoomGuard> + Send + 'static {
        self.assert_room(room);
        // Begun here, not in the `async` block: the site is the caller's line.
        let attempt = self.telemetry.begin(KeyRef::Index(room)).detach();
        let rooms = Arc::clone(self);
        async move {
            observed(attempt, Enter::new(&rooms, room))
                .await
                .into_owned(&rooms)
        }
    }
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl Rooms {
    /// Enters `room` asynchronously, waiting at most `timeout` on Tokio's timer: `None`
    /// if the room could not be entered in time (the waiter then leaves no trace).
    ///
    /// # Panics
    ///
    /// If `room` is out of range (checked here, before the future is polled); the future
    /// panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, like [`Rooms::enter_async`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let rooms = chainlock::rooms::Rooms::new(2);
    /// let held = rooms.enter_async(0).await;
    /// assert!(rooms.try_enter_for_async(1, Duration::from_millis(5)).await.is_none());
    /// drop(held);
    /// assert!(rooms.try_enter_for_async(1, Duration::from_millis(5)).await.is_some());
    /// # }
    /// ```
    #[track_caller]
    pub fn try_enter_for_async(
        &self,
        room: usize,
        timeout: std::time::Duration,
    ) -> impl Future<Output = Option<RoomGuard<'_>>> + Send + '_ {
        let enter = self.enter_checked(room);
        async move { tokio::time::timeout(timeout, enter).await.ok() }
    }

    /// Enters `room` asynchronously, waiting until `deadline` at the latest on Tokio's
    /// timer: `None` if it passed first (the waiter then leaves no trace).
    ///
    /// # Panics
    ///
    /// If `room` is out of range (checked here, before the future is polled); the future
    /// panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, like [`Rooms::enter_async`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::{Duration, Instant};
    ///
    /// let rooms = chainlock::rooms::Rooms::new(2);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = rooms.try_enter_until_async(0, deadline).await.expect("a free lock");
    /// assert!(rooms.try_enter_until_async(1, deadline).await.is_none());
    /// # drop(held);
    /// # }
    /// ```
    #[track_caller]
    pub fn try_enter_until_async(
        &self,
        room: usize,
        deadline: std::time::Instant,
    ) -> impl Future<Output = Option<RoomGuard<'_>>> + Send + '_ {
        let enter = self.enter_checked(room);
        async move { tokio::time::timeout_at(deadline.into(), enter).await.ok() }
    }
}

impl Rooms {
    /// The entry future of `room`, checked (a panic at the caller's line if out of range),
    /// its telemetry begun at the caller's site (that of a timed entry's caller).
    #[track_caller]
    fn enter_checked(&self, room: usize) -> impl Future<Output = RoomGuard<'_>> + Send + '_ {
        self.assert_room(room);
        observed(
            self.telemetry.begin(KeyRef::Index(room)),
            Enter::new(self, room),
        )
    }
}

/// An async entry as the telemetry sees it, through the one hook shape ([`observe_async`]):
/// it waited if its first poll was pending, and its hold is a task's.
async fn observed<'a>(attempt: Attempt<'_>, enter: Enter<'a>) -> RoomGuard<'a> {
    let room = enter.room;
    let acquire = async move { Some(enter.await) };
    observe_async::<_, true>(attempt, room, acquire)
        .await
        .map(RoomGuard::holding)
        .expect("an untimed entry does not give up")
}

impl<'a> Enter<'a> {
    /// The future of an entry into `room` (checked).
    fn new(rooms: &'a Rooms, room: usize) -> Self {
        Self {
            rooms,
            room,
            step: Step::Start,
        }
    }
}

impl<'a> Future for Enter<'a> {
    type Output = RoomGuard<'a>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RoomGuard<'a>> {
        let this = self.get_mut();
        let (rooms, room) = (this.rooms, this.room);
        let entered = |step: &mut Step| {
            *step = Step::Done;
            Poll::Ready(RoomGuard::new(rooms, room))
        };
        match this.step {
            Step::Start => {
                if rooms.enter_fast(room) {
                    return entered(&mut this.step);
                }
                let mut waiters = rooms.waiters.lock();
                match rooms.register(&mut waiters, room) {
                    Registration::Entered => {
                        drop(waiters);
                        entered(&mut this.step)
                    }
                    Registration::Waiting { batch } => {
                        let key = waiters.next_key;
                        waiters.next_key += 1;
                        waiters.rooms[room].wakers.push((key, cx.waker().clone()));
                        this.step = Step::Waiting { batch, key };
                        drop(waiters);
                        Poll::Pending
                    }
                }
            }
            Step::Waiting { batch, key } => {
                let mut waiters = rooms.waiters.lock();
                let queue = &mut waiters.rooms[room];
                if queue.batch != batch {
                    drop(waiters);
                    return entered(&mut this.step);
                }
                // Not admitted, so our waker is still queued (admission drains them).
                if let Some((_, waker)) = queue.wakers.iter_mut().find(|(k, _)| *k == key)
                    && !waker.will_wake(cx.waker())
                {
                    waker.clone_from(cx.waker());
                }
                Poll::Pending
            }
            Step::Done => panic!("`Enter` polled after it completed"),
        }
    }
}

impl Drop for Enter<'_> {
    fn drop(&mut self) {
        let Step::Waiting { batch, key } = self.step else {
            return;
        };
        let mut waiters = self.rooms.waiters.lock();
        let queue = &mut waiters.rooms[self.room];
        if queue.batch == batch {
            queue.wakers.retain(|(k, _)| *k != key);
            let wakers = self.rooms.withdraw(&mut waiters, self.room);
            drop(waiters);
            wakers.wake_all();
        } else {
            // Admitted but never told: we are counted in, so leave properly.
            drop(waiters);
            drop(RoomGuard::new(self.rooms, self.room));
        }
    }
}

impl fmt::Debug for Enter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Enter")
            .field("room", &self.room)
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}
