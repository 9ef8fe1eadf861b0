use chainlock::chain_locker;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Registry;

chain_locker!(struct RegistryLocker(Registry););

async fn descend(root: Arc<Mutex<Registry>>) {
    let _ = RegistryLocker.descend_async(&root).await;
}

fn main() {
    drop(descend(Arc::new(Mutex::new(Registry))));
}
