//! chainlock: typed building blocks for locking structured data correctly and fast.
//!
//! (Crate documentation is written in `README.md` and `chain`; see the modules below.)
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

pub use lock_api;
pub use parking_lot;
