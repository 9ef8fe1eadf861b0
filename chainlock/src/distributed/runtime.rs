//! The runtime behind the blocking API: one current-thread Tokio runtime driven by a dedicated
//! thread, created on first use and kept for the life of the process.

use std::future::Future;
use std::sync::OnceLock;
use tokio::runtime::Handle;

/// The handle of the background runtime.
pub(crate) fn handle() -> &'static Handle {
    static HANDLE: OnceLock<Handle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("chainlock-distributed")
            .build()
            .expect("chainlock: cannot build the background Tokio runtime");
        let handle = runtime.handle().clone();
        std::thread::Builder::new()
            .name("chainlock-distributed".into())
            // Drives timers, sockets and spawned tasks for every `Handle::block_on` caller.
            .spawn(move || runtime.block_on(std::future::pending::<()>()))
            .expect("chainlock: cannot spawn the background runtime thread");
        handle
    })
}

/// Runs `future` to completion on the calling thread, with the background runtime's timers and
/// I/O available to it.
///
/// # Panics
///
/// Panics when called from an asynchronous context (inside a Tokio runtime).
#[track_caller]
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    // The telemetry counts holds taken here as a thread's, not a task's.
    #[cfg(feature = "telemetry")]
    let _blocking = super::observed::on::Blocking::enter();
    handle().block_on(future)
}
