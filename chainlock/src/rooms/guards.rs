//! Proofs of presence in a room: [`RoomGuard`] and, for a lock in an `Arc`,
//! [`OwnedRoomGuard`]; the last one out of a room runs its exit action when it drops.

use std::fmt;
use std::sync::Arc;

use super::Rooms;
use crate::telemetry::hooks::Held;

/// Proof of presence in a room; leaves it when dropped.
///
/// If this was the room's last occupant, dropping the guard runs the room's exit action
/// on this thread and opens the next room (see [`Rooms`]).
///
/// # Panics
///
/// Dropping the guard propagates a panic of the exit action (after the lock has moved
/// on).
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct RoomGuard<'a> {
    pub(super) rooms: &'a Rooms,
    pub(super) room: usize,
    /// The hold's telemetry record (zero-sized without the feature).
    pub(super) held: Held,
}

impl<'a> RoomGuard<'a> {
    /// The guard of an entry, its hold not recorded (yet: see `holding`).
    #[inline]
    pub(super) fn new(rooms: &'a Rooms, room: usize) -> Self {
        Self::with_held(rooms, room, Held::default())
    }

    /// The guard of an entry and its telemetry record.
    #[inline]
    pub(super) fn with_held(rooms: &'a Rooms, room: usize, held: Held) -> Self {
        Self { rooms, room, held }
    }

    /// The guard of an entry the telemetry recorded, with the record of its hold
    /// (`hooks::observe*`'s answer).
    pub(super) fn holding((mut guard, held): (Self, Held)) -> Self {
        guard.held = held;
        guard
    }

    /// Hands our place in the room over to an owned guard of the same lock.
    pub(crate) fn into_owned(mut self, rooms: &Arc<Rooms>) -> OwnedRoomGuard {
        debug_assert!(std::ptr::eq(self.rooms, Arc::as_ptr(rooms)));
        let room = self.room;
        let held = std::mem::take(&mut self.held);
        std::mem::forget(self); // the owned guard leaves instead
        OwnedRoomGuard {
            rooms: Arc::clone(rooms),
            room,
            held,
        }
    }

    /// The room this guard is in.
    ///
    /// # Examples
    ///
    /// ```
    /// let rooms = chainlock::rooms::Rooms::new(3);
    /// assert_eq!(rooms.enter(2).room(), 2);
    /// ```
    #[must_use]
    #[inline]
    pub fn room(&self) -> usize {
        self.room
    }
}

impl Drop for RoomGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        std::mem::take(&mut self.held).released();
        self.rooms.leave(self.room);
    }
}

impl fmt::Debug for RoomGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoomGuard")
            .field("room", &self.room)
            .finish_non_exhaustive()
    }
}

/// Proof of presence in a room of a lock held in an [`Arc`]; leaves it when dropped.
/// Returned by [`Rooms::enter_owned`] (and `Rooms::enter_owned_async` with the `async`
/// feature); otherwise like [`RoomGuard`].
///
/// # Panics
///
/// Dropping the guard propagates a panic of the exit action (after the lock has moved
/// on).
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct OwnedRoomGuard {
    rooms: Arc<Rooms>,
    room: usize,
    /// The hold's telemetry record (zero-sized without the feature).
    held: Held,
}

impl OwnedRoomGuard {
    /// The room this guard is in.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let rooms = Arc::new(chainlock::rooms::Rooms::new(2));
    /// assert_eq!(rooms.enter_owned(1).room(), 1);
    /// ```
    #[must_use]
    #[inline]
    pub fn room(&self) -> usize {
        self.room
    }

    /// The lock this guard belongs to.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let rooms = Arc::new(chainlock::rooms::Rooms::new(2));
    /// let guard = rooms.enter_owned(0);
    /// assert!(Arc::ptr_eq(guard.rooms(), &rooms));
    /// assert_eq!(guard.rooms().current_room(), Some(0));
    /// ```
    #[must_use]
    #[inline]
    pub fn rooms(&self) -> &Arc<Rooms> {
        &self.rooms
    }
}

impl Drop for OwnedRoomGuard {
    #[inline]
    fn drop(&mut self) {
        std::mem::take(&mut self.held).released();
        self.rooms.leave(self.room);
    }
}

impl fmt::Debug for OwnedRoomGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedRoomGuard")
            .field("room", &self.room)
            .finish_non_exhaustive()
    }
}
