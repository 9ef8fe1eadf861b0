//! Connections as a bounded resource: 1,000 locks held by one client on a bounded set of
//! sessions (`max_connections(4)`), against 1,000 connections each holding one (what a
//! connection-per-lock design, chainlock's before the bound, opens).
//!
//! - `held_1000/*` (criterion): acquire 1,000 free integer keys at once, then release them.
//!   `bounded_client`: one `LockClient`, set up once. `connection_each`: 1,000 raw
//!   `tokio_postgres` connections, each opened, `pg_advisory_lock`, closed (the lock goes with
//!   its connection).
//! - server memory (printed after criterion's output): the proportional set size (PSS, from
//!   `/proc/<pid>/smaps_rollup`, so shared memory is split among backends) of the server
//!   backends holding the 1,000 locks, either way. Needs the server on this machine and the
//!   right to read its processes (the test cluster of `scripts/pg.sh`, as root).
//!
//! Needs a PostgreSQL server at `CHAINLOCK_PG_URL` with `max_connections` above 1,000
//! (`bash scripts/pg.sh cargo bench --bench distributed_connections`); without it the
//! benchmark is skipped with a notice (an error in CI).

use chainlock::distributed::{LockClient, PostgresOptions};
use criterion::{Criterion, criterion_group};
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

const LOCKS: i32 = 1000;

fn pg_url() -> Option<String> {
    if let Ok(url) = std::env::var("CHAINLOCK_PG_URL") {
        return Some(url);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CHAINLOCK_PG_URL is not set in CI (scripts/test.sh starts a server)"
    );
    eprintln!("notice: CHAINLOCK_PG_URL is not set; skipping the connection benchmarks");
    None
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The keys of this benchmark: `(pid, 0..LOCKS)`.
fn keys() -> impl Iterator<Item = (i32, i32)> {
    let pid = i32::try_from(std::process::id()).unwrap();
    (0..LOCKS).map(move |i| (pid, i))
}

async fn hold_all(locks: &LockClient) -> Vec<chainlock::distributed::DistributedGuard> {
    let mut tasks = JoinSet::new();
    for key in keys() {
        let locks = locks.clone();
        tasks.spawn(async move { locks.lock(key).await.unwrap() });
    }
    tasks.join_all().await
}

async fn release_all(guards: Vec<chainlock::distributed::DistributedGuard>) {
    let mut tasks = JoinSet::new();
    for guard in guards {
        tasks.spawn(guard.release());
    }
    for released in tasks.join_all().await {
        released.unwrap();
    }
}

/// 1,000 connections, each holding one key; dropping them closes them (and unlocks).
async fn connections_each_holding_one(url: &str) -> Vec<tokio_postgres::Client> {
    let mut tasks = JoinSet::new();
    for (high, low) in keys() {
        let url = url.to_owned();
        tasks.spawn(async move {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .execute("SELECT pg_advisory_lock($1, $2)", &[&high, &low])
                .await
                .unwrap();
            client
        });
    }
    tasks.join_all().await
}

fn held_1000(c: &mut Criterion) {
    let Some(url) = pg_url() else { return };
    let rt = runtime();
    let mut group = c.benchmark_group("held_1000");
    group.sample_size(10);
    let locks = rt.block_on(async {
        LockClient::postgres_with(PostgresOptions::new(&url).unwrap().max_connections(4))
            .await
            .unwrap()
    });
    group.bench_function("bounded_client", |b| {
        b.iter(|| {
            rt.block_on(async {
                let guards = hold_all(&locks).await;
                release_all(guards).await;
            });
        });
    });
    group.bench_function("connection_each", |b| {
        b.iter(|| {
            rt.block_on(async {
                let clients = connections_each_holding_one(&url).await;
                drop(clients);
            });
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = held_1000
}

/// The PSS of process `pid` in KiB, if this process may read it.
fn pss_kib(pid: i32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    rollup
        .lines()
        .find_map(|line| line.strip_prefix("Pss:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The backends holding this benchmark's keys: how many, and their total PSS in KiB.
async fn holders_memory(control: &tokio_postgres::Client) -> (usize, Option<u64>) {
    let pids: Vec<i32> = control
        .query(
            "SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND granted \
             AND objsubid = 2 AND classid::bigint = $1",
            &[&i64::from(std::process::id())],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let total = pids.iter().map(|&pid| pss_kib(pid)).sum();
    (pids.len(), total)
}

fn server_memory() {
    let Some(url) = pg_url() else { return };
    let rt = runtime();
    rt.block_on(async {
        let (control, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let report = |label: &str, (backends, kib): (usize, Option<u64>)| {
            let memory = kib.map_or_else(
                || "n/a (server processes not readable)".to_owned(),
                |kib| format!("{}.{} MiB PSS", kib / 1024, kib % 1024 * 10 / 1024),
            );
            println!(
                "server memory, {LOCKS} locks held, {label:<16}: {backends:>4} backends, {memory}"
            );
        };
        let locks =
            LockClient::postgres_with(PostgresOptions::new(&url).unwrap().max_connections(4))
                .await
                .unwrap();
        let guards = hold_all(&locks).await;
        report("bounded client", holders_memory(&control).await);
        release_all(guards).await;
        let clients = connections_each_holding_one(&url).await;
        report("connection each", holders_memory(&control).await);
        drop(clients);
    });
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    server_memory();
}
