//! What can go wrong with a [`Rooms`](super::Rooms) lock: only misuse, a bad room index.

/// A misuse of a [`Rooms`](super::Rooms) lock (a room that cannot be waited for would be `Ok(None)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoomError {
    /// The room index is not below the number of rooms.
    #[error("room {room} is out of range: the lock has {rooms} rooms")]
    OutOfRange {
        /// The requested room.
        room: usize,
        /// The number of rooms of the lock.
        rooms: usize,
    },
}

/// The panic of a bad room index, out of line; reported where the public method was called.
#[cold]
#[inline(never)]
#[track_caller]
pub(super) fn out_of_range(error: RoomError) -> ! {
    panic!("{error}")
}
