use chainlock::chain_locker;
use chainlock::lock_api::{GuardNoSend, RawMutex};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A spin lock: it has no way to wait with a timeout.
struct Spin(AtomicBool);

unsafe impl RawMutex for Spin {
    const INIT: Spin = Spin(AtomicBool::new(false));
    type Guard = GuardNoSend;
    fn lock(&self) -> GuardNoSend {
        while self.0.swap(true, Ordering::Acquire) {}
        GuardNoSend::new()
    }
    fn try_lock(&self) -> Option<GuardNoSend> {
        (!self.0.swap(true, Ordering::Acquire)).then(|| GuardNoSend::new())
    }
    unsafe fn unlock(&self, _: GuardNoSend) {
        self.0.store(false, Ordering::Release);
    }
    fn is_locked(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

struct Registry;

chain_locker!(struct RegistryLocker(Registry););

fn main() {
    let root = Arc::new(chainlock::lock_api::Mutex::<Spin, _>::new(Registry));
    let _ = RegistryLocker.descend(&root);
    let _ = RegistryLocker.descend_until(&root, Instant::now());
}
