//! chainlock: typed building blocks for locking structured data correctly and fast.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod chain;
#[cfg(feature = "distributed")]
#[cfg_attr(docsrs, doc(cfg(feature = "distributed")))]
pub mod distributed;
pub mod keyed;
mod loom;
pub mod rooms;
pub mod striped;

#[doc(hidden)]
pub mod __private;

pub use chain::{ChainNode, Exit};
#[doc = include_str!("derive_chain_node.md")]
pub use chainlock_macros::ChainNode;
#[doc = include_str!("chain_locker.md")]
pub use chainlock_macros::chain_locker;
pub use lock_api;
pub use parking_lot;
