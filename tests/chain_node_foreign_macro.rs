//! A node type made by another crate's `macro_rules!` macro (its paths through `$crate`, the
//! field's name from here): the derive points its errors at this crate's tokens but must look
//! every name up where the macro wrote it (outside attack, session 12: `$crate::Room` was
//! looked up in this crate).

use chainlock::chain_locker;
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock_renamed_dependency::Room as ForeignRoom;
use std::sync::Arc;

// No `Room` in this crate: a `$crate::Room` looked up here finds nothing.
chainlock_renamed_dependency::rooms_node!(Hall, rooms);

chain_locker!(
    struct ToRoom(Hall, ForeignRoom);
);

#[test]
fn a_node_made_by_another_crates_macro_is_descended_by_key() {
    let hall = Hall {
        rooms: vec![
            Arc::new(Mutex::new(ForeignRoom { seats: 6 })),
            Arc::new(Mutex::new(ForeignRoom { seats: 7 })),
        ],
    };
    let root = Arc::new(RwLock::new(hall));
    assert_eq!(ToRoom.run_keys(&root, &0, |room| room.seats), Ok(6));
    assert_eq!(ToRoom.run_keys(&root, &1, |room| room.seats), Ok(7));
    assert!(ToRoom.run_keys(&root, &2, |room| room.seats).is_err());
}
