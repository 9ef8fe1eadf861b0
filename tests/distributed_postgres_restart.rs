//! A server restart while a lock is held: the lost signal fires, and no two holders ever share a
//! token. In a test binary of its own, so that the restart disturbs no other test (cargo runs
//! test binaries one after another).

mod distributed_common;

use chainlock::distributed::{Error, LockClient, PostgresOptions};
use distributed_common::pg_url;
use std::time::{Duration, Instant};

#[test]
fn server_restart_fires_the_lost_signal_and_tokens_stay_unique() {
    let Some(url) = pg_url() else { return };
    let Ok(restart) = std::env::var("CHAINLOCK_PG_RESTART") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CHAINLOCK_PG_RESTART is not set in CI (scripts/pg.sh sets it)"
        );
        eprintln!("notice: CHAINLOCK_PG_RESTART is not set; skipping the server restart test");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let options = PostgresOptions::new(&url).unwrap();
        let locks = LockClient::postgres_with(options.clone()).await.unwrap();
        let name = format!("restart-{}", std::process::id());
        let mut tokens = vec![];
        let held = locks.acquire(&name).await.unwrap();
        let other = locks.acquire(&format!("{name}-other")).await.unwrap();
        tokens.push(held.token().get());
        tokens.push(other.token().get());
        assert!(!held.is_lost());

        let start = Instant::now();
        let status = tokio::task::spawn_blocking(move || {
            std::process::Command::new("bash").arg(restart).status()
        })
        .await
        .unwrap()
        .unwrap();
        assert!(status.success(), "restart failed: {status}");
        tokio::time::timeout(Duration::from_secs(5), held.lost())
            .await
            .expect("the lost signal fires");
        let detected = start.elapsed();
        assert!(
            held.is_lost() && other.is_lost(),
            "every lock of the restarted server is lost"
        );
        eprintln!("lost detected {detected:?} after the restart began");
        assert!(
            matches!(held.release().await, Err(Error::Lost)),
            "releasing a lost lock says so"
        );
        drop(other);

        // After the restart: new sessions (the pooled ones were cut too) and new tokens.
        let again = LockClient::postgres_with(options).await.unwrap();
        for _ in 0..3 {
            let guard = locks.acquire(&name).await.unwrap();
            tokens.push(guard.token().get());
            guard.release().await.unwrap();
            let guard = again.acquire(&name).await.unwrap();
            tokens.push(guard.token().get());
            guard.release().await.unwrap();
        }
        let mut sorted = tokens.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            tokens.len(),
            "a token was handed out twice: {tokens:?}"
        );
        assert!(
            tokens[2..].iter().all(|&t| t > tokens[0].max(tokens[1])),
            "tokens went back: {tokens:?}"
        );
    });
}
