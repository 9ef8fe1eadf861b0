//! Typed, tested building blocks for locking structured data correctly and fast.
//!
//! | module | what |
//! |---|---|
//! | [`chain_locker!`], [`ChainNode`](macro@ChainNode), [`chain`] | hand-over-hand locking down a tree: lock the parent, find the child, lock the child, only then release the parent; generated and typed for chains of any depth |
//! | [`striped`] | lock striping: a key hashed onto one of a fixed set of locks |
//! | [`keyed`] | a keyed lock manager: exact per-key locks, reentrant, FIFO-fair, timeouts, bounded memory, all-or-nothing multi-key; per-key readers/writers ([`keyed::KeyedRwLocks`]) and per-key permits ([`keyed::KeyedPermits`]) |
//! | [`hybrid`] | a hybrid lock (the hybrid latch of the `LeanStore` engine): optimistic reads that write nothing and validate a version, shared and exclusive modes, upgrade by version; sound in Rust's memory model (data changed through atomics, never a `&mut T` while shared) |
//! | [`rooms`] | shared rooms (group mutual exclusion): many threads in one room, one room at a time, exit actions, no starvation |
//! | [`mapped`] | owned guards (from chain descents and walks) narrowed to a part of the locked data, still holding the lock |
//! | [`walk`] | hand-over-hand walks of run-time depth down recursive trees (file systems, B-trees, lists): key paths or step closures, latch crabbing, retaining (Bayer–Schkolnick) and speculative descents |
//! | `distributed` | a named mutex across processes (file locks) and machines (PostgreSQL; etcd, which keeps its holds through the loss of a minority of its members), with fencing tokens and a lost-lock signal; also a reader-writer lock, a counting semaphore, all-or-nothing acquisition of several names and leader election with fencing tokens and a loss signal (feature `distributed`) |
//! | `telemetry` | contention statistics per lock (counts, wait and hold histograms, waiter and holder call sites, hot keys), live holders and waiters, wait-for cycles in debug builds, pprof and table exports (feature `telemetry`) |
//!
//! # Examples
//!
//! ```
//! use chainlock::parking_lot::{Mutex, RwLock};
//! use chainlock::{Absence, ChainNode, Exit, chain_locker};
//! use std::collections::HashMap;
//! use std::sync::Arc;
//!
//! #[derive(ChainNode)]
//! struct Registry {
//!     #[chain(children)]
//!     lectures: HashMap<u32, Arc<RwLock<Lecture>>>,
//! }
//!
//! #[derive(ChainNode)]
//! struct Lecture {
//!     #[chain(children)]
//!     classes: Vec<Arc<Mutex<Class>>>,
//! }
//!
//! #[derive(ChainNode)]
//! struct Class {
//!     students: Vec<u32>,
//! }
//!
//! chain_locker!(pub struct ClassLocker(shared Registry, shared Lecture, Class););
//!
//! let class = Arc::new(Mutex::new(Class { students: vec![] }));
//! let lecture = Arc::new(RwLock::new(Lecture { classes: vec![class] }));
//! let registry = Arc::new(RwLock::new(Registry { lectures: HashMap::from([(42, lecture)]) }));
//!
//! ClassLocker.run_keys(&registry, &42, &0, |class| class.students.push(7)).unwrap();
//! assert_eq!(ClassLocker.run_keys(&registry, &42, &1, |c| c.students.len()), Err(Exit::Absent { level: 2, cause: Absence::Missing }));
//! ```
//!
//! An early exit is an [`Exit`], with its [`Absence`] (missing or closed) beside it here at
//! the crate root (also `chainlock::chain::Absence`). Only a parent whose children are found
//! by key needs the derive (it writes [`Children`](chain::Children)); a leaf needs none. A
//! `lock_leaves` path of one key is a bare `&K`, and the guards come back in the order of the
//! paths: the chain guide ([`chain`]) shows each.
//!
//! # Cargo features
//!
//! | feature | default | what |
//! |---|---|---|
//! | `async` | no | the runtime-independent async faces: `keyed::AsyncKeyedLocks`, `AsyncKeyedRwLocks`, `AsyncKeyedPermits`, `Rooms::enter_async` (futures that need only a waker) |
//! | `tokio` | no | implies `async`; what needs Tokio: async chain lockers and walks over `tokio::sync::{Mutex, RwLock}` (owned guards), the async faces' timed waits (`try_lock_for`, `try_enter_for_async`, …, on Tokio's timer) |
//! | `distributed` | no | the distributed named mutex with its embedded file backend (one machine, many processes); pulls in tokio |
//! | `postgres` | no | the PostgreSQL backend of the distributed named mutex (many machines), on `tokio-postgres` |
//! | `postgres-tls` | no | TLS to PostgreSQL (rustls with `ring`, no OpenSSL; the server's certificate verified: system roots or a given CA) |
//! | `etcd` | no | the etcd backend of the distributed locks (a cluster that survives the loss of a member), etcd's own lock algorithm, compatible with `etcdctl lock`; on `etcd-client` (needs `protoc` to build) |
//! | `etcd-tls` | no | TLS to etcd (rustls with `ring`, no OpenSSL; members' certificates verified against system roots or a given CA; client certificates for mutual TLS) |
//! | `telemetry` | no | contention telemetry (`chainlock::telemetry`), compiled out without it, off at run time until `telemetry::enable`; pulls in `tracing` |
//!
//! # Versions of `lock_api` and `parking_lot`
//!
//! The locks chainlock builds on, and the ones its generic types accept, are `lock_api`
//! **0.5** locks: parking_lot **0.13**'s `Mutex` and `RwLock`, or any
//! `lock_api::Mutex<R, T>` / `lock_api::RwLock<R, T>` of lock_api 0.5. Use the re-exports
//! [`chainlock::lock_api`](lock_api) and [`chainlock::parking_lot`](parking_lot), or depend
//! on the same major versions:
//!
//! ```toml
//! [dependencies]
//! lock_api = "0.5"
//! parking_lot = "0.13"
//! ```
//!
//! A parking_lot 0.12 (lock_api 0.4) lock is another type: chain lockers and
//! [`striped::Striped`] do not accept it.
//!
//! parking_lot's `send_guard` is deliberately not enabled: it conflicts with its
//! `deadlock_detection`. Blocking guards therefore stay on their thread; use the tokio flavor
//! to hold a guard across `.await` on a multi-threaded runtime.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod chain;
#[cfg(feature = "distributed")]
#[cfg_attr(docsrs, doc(cfg(feature = "distributed")))]
pub mod distributed;
mod engine;
pub mod hybrid;
pub mod keyed;
mod lock_order;
mod loom;
pub mod mapped;
pub mod rooms;
mod spread;
pub mod striped;
#[cfg(feature = "telemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "telemetry")))]
pub mod telemetry;
/// Without the `telemetry` feature: the same hooks (`telemetry/hooks.rs`), over a zero-sized
/// mirror of the recording core (`telemetry/off.rs`).
#[cfg(not(feature = "telemetry"))]
mod telemetry {
    pub(crate) mod hooks;
    #[path = "off.rs"]
    mod off;
    use off::{naming, probe, sampling, state};
}
pub mod walk;

#[doc(hidden)]
pub mod __private;

pub use chain::{Absence, ChainNode, Exit};
#[doc = include_str!("derive_chain_node.md")]
pub use chainlock_macros::ChainNode;
#[doc = include_str!("chain_locker.md")]
pub use chainlock_macros::chain_locker;
pub use lock_api;
pub use parking_lot;

/// The README's Rust blocks, compiled and run as doc tests so that they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
