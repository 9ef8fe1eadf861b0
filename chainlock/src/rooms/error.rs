//! The one misuse of a [`Rooms`](super::Rooms) lock, a room index out of range: a panic
//! at the caller, from every method that takes a room (as slice indexing, and as lock_api's
//! locks, whose `try_` methods return only `Option`).

/// The panic of a bad room index, out of line; reported where the public method was called.
#[cold]
#[inline(never)]
#[track_caller]
pub(super) fn out_of_range(room: usize, rooms: usize) -> ! {
    panic!("room {room} is out of range: the lock has {rooms} rooms")
}
