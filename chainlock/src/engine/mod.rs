//! The engines of the named locks ([`keyed`](crate::keyed) and the
//! [`striped::Semaphore`](crate::striped::Semaphore)), as tokio keeps `batch_semaphore.rs`
//! beside the primitives built on it.
//!
//! - `sharded.rs`: the sharded table both registries keep their entries in (shards chosen
//!   by hash, entries named by a [`Ticket`](sharded::Ticket), memory given back after a
//!   burst of keys), each shard behind a `shard_lock.rs` lock;
//! - `exclusive.rs`: exclusive, reentrant-capable keys with FIFO hand-off;
//! - `weighted.rs`: weights out of one capacity per key (readers/writers, permits);
//! - `waiter.rs`: a queued request and how it is woken;
//! - `wait.rs`: how a thread waits (park until the grant or a deadline);
//! - `claim.rs`: how a task waits (one cancel-safe future for every async face).
//!
//! Every face uses these through `crate::engine`; none reaches into another face.

#[cfg(feature = "async")]
pub(crate) mod claim;
pub(crate) mod exclusive;
mod shard_lock;
pub(crate) mod sharded;
pub(crate) mod wait;
pub(crate) mod waiter;
pub(crate) mod weighted;

/// The default number of shards: four per available core, rounded up to a power of two, so
/// that threads rarely meet on a shard.
pub(crate) fn default_shards() -> usize {
    std::thread::available_parallelism()
        .map_or(8, |cores| cores.get() * 4)
        .next_power_of_two()
}

#[cfg(all(test, loom))]
mod tests {
    mod loom_exclusive;
    mod loom_weighted;
}
