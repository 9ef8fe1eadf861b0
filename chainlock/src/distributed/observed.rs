//! The distributed acquisitions as the telemetry sees them: per backend and name
//! (`LockName::Distributed`), whatever the backend, at the seam ([`LockClient`]'s one
//! acquisition, so the file, PostgreSQL and etcd backends all report).
//!
//! Through the hooks' async shape for a lock that can be tried (`observe_async_tried`):
//! enabled, a sampled acquisition that may wait first asks the backend without waiting
//! ([`Wait::Never`]): if that fails, the acquisition is contended and waits as asked. That
//! costs one more round trip on a sampled contended acquisition only; one not sampled asks
//! as it would without the telemetry. A hold taken by a task (the
//! async faces) counts in `hold_across_await`; one taken through a `blocking_*` face is a
//! thread's and counts in `hold`. The sites are the seam's (an `async fn` cannot be
//! `#[track_caller]`): the statistics are per name.
//!
//! Without the `telemetry` feature, [`acquire`] is the backend's acquisition and the guard's
//! record ([`Held`]) is zero-sized.
//!
//! [`LockClient`]: super::LockClient

use super::backend::{Backend, Hold, Mode, Wait};
use super::{Error, LockKey};
use crate::telemetry::hooks::Held;

/// The backend's acquisition of `key`, with the telemetry's record of the hold.
pub(super) async fn acquire(
    backend: &dyn Backend,
    key: LockKey<'_>,
    mode: Mode,
    wait: Wait,
) -> Result<Option<(Box<dyn Hold>, Held)>, Error> {
    #[cfg(feature = "telemetry")]
    if crate::telemetry::is_enabled() {
        return on::acquire(backend, key, mode, wait).await;
    }
    // Without the feature, `Held` is zero-sized and this is the backend's acquisition.
    let held = backend.acquire(key, mode, wait).await?;
    Ok(held.map(|held| (held, Held::default())))
}

#[cfg(feature = "telemetry")]
pub(super) mod on {
    use super::super::backend::{Backend, Hold, Mode, Wait};
    use super::super::{Error, LockKey};
    use crate::telemetry::hooks::{Held, KeyRef, LockAddr, Probe, ProbeKind, observe_async_tried};
    use std::cell::Cell;
    use std::hash::{DefaultHasher, Hash, Hasher};

    static FILE: Probe = Probe::new(ProbeKind::Distributed { backend: "file" });
    static POSTGRES: Probe = Probe::new(ProbeKind::Distributed {
        backend: "postgres",
    });
    static ETCD: Probe = Probe::new(ProbeKind::Distributed { backend: "etcd" });
    static OTHER: Probe = Probe::new(ProbeKind::Distributed { backend: "other" });

    fn probe(backend: &str) -> &'static Probe {
        match backend {
            "file" => &FILE,
            "postgres" => &POSTGRES,
            "etcd" => &ETCD,
            _ => &OTHER,
        }
    }

    thread_local! {
        /// Whether this thread runs a blocking face's future (its holds are the thread's).
        static BLOCKING: Cell<bool> = const { Cell::new(false) };
    }

    /// Marks the thread as running a blocking face until dropped.
    pub(in crate::distributed) struct Blocking(bool);

    impl Blocking {
        pub(in crate::distributed) fn enter() -> Self {
            Blocking(BLOCKING.replace(true))
        }
    }

    impl Drop for Blocking {
        fn drop(&mut self) {
            BLOCKING.set(self.0);
        }
    }

    pub(super) async fn acquire(
        backend: &dyn Backend,
        key: LockKey<'_>,
        mode: Mode,
        wait: Wait,
    ) -> Result<Option<(Box<dyn Hold>, Held)>, Error> {
        let name = key.to_string();
        let mut hasher = DefaultHasher::new();
        name.hash(&mut hasher);
        let hash = hasher.finish();
        // The lock's identity within its backend: the same name is the same lock.
        #[expect(clippy::cast_possible_truncation, reason = "an identity, not a number")]
        let address = hash as LockAddr;
        let mut attempt = probe(backend.name()).begin(KeyRef::Hash(hash, &|| name.clone()));
        if !BLOCKING.get() {
            attempt.mark_async();
        }
        // Tried without waiting first (when recorded): the contended acquisitions are those
        // the backend refused then.
        let try_lock = || backend.acquire(key, mode, Wait::Never);
        let waits = match wait {
            Wait::Never => None,
            Wait::Until { .. } | Wait::Forever => Some(|| backend.acquire(key, mode, wait.now())),
        };
        observe_async_tried(attempt, address, try_lock, waits).await
    }
}
