//! The lock word: which room is occupied, by how many, and whether anyone waits, packed
//! into one `u64` so that the fast paths are a single compare-and-swap.
//!
//! ```text
//!  63            33   32   31                 0
//! [ room + 1 (31) | W | occupant count (32) ]
//! ```
//!
//! - `room + 1 == 0`: no room is occupied (the whole word is [`FREE`]).
//! - `count > 0`: the room is open; `count == 0` with a room set: its last occupant left
//!   and the room is closing (exit action, then hand-off). Nobody may enter a closing room.
//! - `W` (waiting): at least one thread is registered in the wait queues. Kept equal to
//!   "the queues are not empty" by code holding the queue mutex; the fast paths never
//!   change it, they only refuse to admit a newcomer while it is set.

/// No room occupied, nobody waiting.
pub(super) const FREE: u64 = 0;
/// Someone is registered in a wait queue.
pub(super) const WAITING: u64 = 1 << 32;
const COUNT_MASK: u64 = WAITING - 1;
const ROOM_SHIFT: u32 = 33;

/// The most occupants one room can hold at once.
pub(super) const MAX_OCCUPANTS: u64 = COUNT_MASK;
/// The most rooms a lock can have: `room + 1` must fit in 31 bits.
pub(super) const MAX_ROOMS: usize = (1 << (64 - ROOM_SHIFT)) - 1;

/// A decoded view of the lock word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct State(pub(super) u64);

impl State {
    /// `room` open with `count` occupants and no waiter.
    #[inline]
    pub(super) fn open(room: usize, count: u64) -> Self {
        debug_assert!(room < MAX_ROOMS && count <= MAX_OCCUPANTS);
        Self(((room as u64 + 1) << ROOM_SHIFT) | count)
    }

    /// The occupied (open or closing) room.
    #[inline]
    pub(super) fn room(self) -> Option<usize> {
        match self.0 >> ROOM_SHIFT {
            0 => None,
            plus_one => Some((plus_one - 1) as usize),
        }
    }

    #[inline]
    pub(super) fn count(self) -> u64 {
        self.0 & COUNT_MASK
    }

    #[inline]
    pub(super) fn waiting(self) -> bool {
        self.0 & WAITING != 0
    }

    /// The word after one more thread enters `room`, if the rules let it in without
    /// waiting: no room is occupied, or `room` is open and nobody waits (for any room,
    /// so that arrivals to the open room cannot starve the others).
    #[inline]
    pub(super) fn admit(self, room: usize) -> Option<u64> {
        if self.0 == FREE {
            Some(Self::open(room, 1).0)
        } else if self.0 >> ROOM_SHIFT == room as u64 + 1 // same room, nobody waiting
            && self.0 & WAITING == 0
            && (1..MAX_OCCUPANTS).contains(&self.count())
        {
            Some(self.0 + 1)
        } else {
            None
        }
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("room", &self.room())
            .field("count", &self.count())
            .field("waiting", &self.waiting())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn packs_and_unpacks() {
        let s = State::open(MAX_ROOMS - 1, 7);
        assert_eq!(s.room(), Some(MAX_ROOMS - 1));
        assert_eq!(s.count(), 7);
        assert!(!s.waiting());
        let w = State(s.0 | WAITING);
        assert!(w.waiting());
        assert_eq!((w.room(), w.count()), (Some(MAX_ROOMS - 1), 7));
        assert_eq!(State(FREE).room(), None);
    }

    #[test]
    fn admission_rules() {
        assert_eq!(State(FREE).admit(3), Some(State::open(3, 1).0));
        let open = State::open(3, 2);
        assert_eq!(open.admit(3), Some(State::open(3, 3).0));
        assert_eq!(open.admit(2), None, "another room is occupied");
        assert_eq!(State(open.0 | WAITING).admit(3), None, "someone waits");
        assert_eq!(State::open(3, 0).admit(3), None, "closing");
        assert_eq!(State::open(3, MAX_OCCUPANTS).admit(3), None, "full");
    }
}
