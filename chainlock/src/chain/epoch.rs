//! Children that optimistic readers look up while a writer inserts and removes them:
//! [`EpochMap`] (by key) and [`EpochVec`] (by index), copy-on-write snapshots freed by epoch
//! reclamation, and the [`EpochGuard`](crate::chain::EpochGuard) a reader holds while it looks.
//!
//! The design, its cost, the garbage bound, an example of a node type and what a step that
//! reads optimistically may do are in the docs of [`EpochMap`], which rustdoc shows (this
//! module is private).
//!
//! One file per concept: `snapshots.rs` the publication and reclamation both containers
//! share, `map.rs` and `vec.rs` the containers.

mod map;
mod snapshots;
mod vec;

pub use map::EpochMap;
pub use vec::EpochVec;

#[cfg(test)]
mod tests {
    #[cfg(not(loom))]
    mod miri;
    #[cfg(not(loom))]
    mod units;

    #[cfg(loom)]
    mod loom_epoch;
}
