//! A server crash while a shared lock and a semaphore permit are held: both signal the loss,
//! and tokens (shared and exclusive) keep increasing across the crash recovery. In a test
//! binary of its own, so that the crash disturbs no other test.

mod distributed_common;

use chainlock::distributed::{Error, LockClient};
use distributed_common::{pg_url, runtime, unique};
use std::time::Duration;

#[test]
fn shared_guards_and_permits_are_lost_with_the_server_and_tokens_keep_increasing() {
    let Some(url) = pg_url() else { return };
    let Ok(crash) = std::env::var("CHAINLOCK_PG_CRASH") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CHAINLOCK_PG_CRASH is not set in CI (scripts/pg.sh sets it)"
        );
        eprintln!("notice: CHAINLOCK_PG_CRASH is not set; skipping this test");
        return;
    };
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        let name = unique("catalog");
        let reader = locks.lock_shared(&name).await.unwrap();
        let permit = locks.semaphore(&name, 2).acquire().await.unwrap();
        let (reader_token, permit_token) = (reader.token(), permit.token());

        let status = tokio::task::spawn_blocking(move || {
            std::process::Command::new("bash").arg(crash).status()
        })
        .await
        .unwrap()
        .unwrap();
        assert!(status.success(), "crash script failed: {status}");

        tokio::time::timeout(Duration::from_secs(10), reader.lost())
            .await
            .expect("the shared guard signals the loss");
        tokio::time::timeout(Duration::from_secs(10), permit.lost())
            .await
            .expect("the permit signals the loss");
        assert!(matches!(reader.release().await, Err(Error::Lost)));
        assert!(matches!(permit.release().await, Err(Error::Lost)));

        // Crash recovery reset the unlogged counter; the epochs keep tokens increasing.
        let again = locks.lock_shared(&name).await.unwrap();
        assert!(
            again.token() > reader_token,
            "shared tokens increase across the crash"
        );
        again.release().await.unwrap();
        let writer = locks.lock(&name).await.unwrap();
        assert!(writer.token() > reader_token);
        writer.release().await.unwrap();
        let permit = locks.semaphore(&name, 2).acquire().await.unwrap();
        assert!(
            permit.token() > permit_token,
            "permit tokens increase across the crash"
        );
        permit.release().await.unwrap();
    });
}
