//! Benchmarks of the distributed named mutex.
//!
//! - `uncontended/*` (criterion): one acquire + release of a free name. chainlock's
//!   PostgreSQL backend against raw `pg_advisory_lock` / `pg_advisory_unlock` on one connection
//!   and against the reference design's unique-key insert + delete; the file backend.
//! - hand-off latency (a measured harness, printed after criterion's output): from the holder
//!   calling release to a waiter (another client, already waiting) holding the lock, p50 and
//!   p99, for each backend and for the reference design's poll loop (insert, 100 ms sleep
//!   between tries).
//!
//! - etcd (with the suite's feature `etcd` and a cluster at `CHAINLOCK_ETCD_ENDPOINTS`, as
//!   `scripts/etcd.sh` starts): `uncontended_etcd/*` (criterion), chainlock's lock + release
//!   against the recipes a user writes on `etcd-client` directly, on one lease granted once and
//!   kept alive: a put-if-absent transaction and a delete (`recipe_txn`), and etcd's `Lock` and
//!   `Unlock` RPCs (`recipe_lock_rpc`); the same pair again in alternating rounds (printed: the
//!   median of the rounds' medians and the ratio, robust to a load that drifts); the same
//!   hand-off harness, and uncontended acquire + release cycles (p50/p99) side by side with the
//!   PostgreSQL backend's and with Go's own `concurrency.Mutex` (the client `etcdctl lock`
//!   runs) on sessions it keeps, measured the same way by `scripts/go-mutex` (`go-mutex bench`,
//!   built by `scripts/etcd.sh`).
//!
//! Needs a PostgreSQL server at `CHAINLOCK_PG_URL` (`bash scripts/pg.sh cargo bench --bench
//! distributed`); without it the PostgreSQL parts are skipped with a notice (an error in CI).

use chainlock::distributed::LockClient;
use criterion::{Criterion, criterion_group};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

fn pg_url() -> Option<String> {
    if let Ok(url) = std::env::var("CHAINLOCK_PG_URL") {
        return Some(url);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CHAINLOCK_PG_URL is not set in CI (scripts/test.sh starts a server)"
    );
    eprintln!("notice: CHAINLOCK_PG_URL is not set; skipping the PostgreSQL benchmarks");
    None
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn scratch() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("chainlock-bench-{}", std::process::id()))
}

/// The reference design: a row per held name, inserted to lock and deleted to unlock.
struct PollLock {
    client: tokio_postgres::Client,
}

impl PollLock {
    async fn connect(url: &str) -> Self {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS chainlock_bench_poll (name text PRIMARY KEY)",
            )
            .await
            .unwrap();
        Self { client }
    }

    async fn try_lock(&self, name: &str) -> bool {
        let inserted = self
            .client
            .execute(
                "INSERT INTO chainlock_bench_poll VALUES ($1) ON CONFLICT DO NOTHING",
                &[&name],
            )
            .await
            .unwrap();
        inserted == 1
    }

    async fn lock(&self, name: &str) {
        while !self.try_lock(name).await {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn unlock(&self, name: &str) {
        self.client
            .execute("DELETE FROM chainlock_bench_poll WHERE name = $1", &[&name])
            .await
            .unwrap();
    }
}

fn uncontended(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("uncontended");
    let dir = scratch();
    let file = LockClient::file(&dir).unwrap();
    group.bench_function("file", |b| {
        b.iter(|| {
            rt.block_on(async {
                file.lock(black_box("bench"))
                    .await
                    .unwrap()
                    .release()
                    .await
                    .unwrap();
            });
        });
    });
    if let Some(url) = pg_url() {
        let ours = rt.block_on(LockClient::postgres(&url)).unwrap();
        group.bench_function("postgres/chainlock", |b| {
            b.iter(|| {
                rt.block_on(async {
                    ours.lock(black_box("bench"))
                        .await
                        .unwrap()
                        .release()
                        .await
                        .unwrap();
                });
            });
        });
        let (raw, lock, unlock) = rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let lock = client.prepare("SELECT pg_advisory_lock($1)").await.unwrap();
            let unlock = client
                .prepare("SELECT pg_advisory_unlock($1)")
                .await
                .unwrap();
            (client, lock, unlock)
        });
        group.bench_function("postgres/raw_advisory_lock", |b| {
            b.iter(|| {
                rt.block_on(async {
                    raw.query_one(&lock, &[&black_box(42_i64)]).await.unwrap();
                    raw.query_one(&unlock, &[&black_box(42_i64)]).await.unwrap();
                });
            });
        });
        // What a durable counter costs (chainlock's tokens before epochs): raw locking plus
        // `nextval` of a logged sequence, whose WAL record every 32 calls is flushed at commit.
        let lock_and_durable_nextval = rt.block_on(async {
            raw.batch_execute("CREATE SEQUENCE IF NOT EXISTS chainlock_bench_durable_counter")
                .await
                .unwrap();
            raw.prepare("SELECT pg_advisory_lock($1), nextval('chainlock_bench_durable_counter')")
                .await
                .unwrap()
        });
        group.bench_function("postgres/raw_advisory_lock_with_durable_nextval", |b| {
            b.iter(|| {
                rt.block_on(async {
                    raw.query_one(&lock_and_durable_nextval, &[&black_box(43_i64)])
                        .await
                        .unwrap();
                    raw.query_one(&unlock, &[&black_box(43_i64)]).await.unwrap();
                });
            });
        });
        let poll = rt.block_on(PollLock::connect(&url));
        group.bench_function("postgres/reference_insert_delete", |b| {
            b.iter(|| {
                rt.block_on(async {
                    poll.lock(black_box("bench")).await;
                    poll.unlock("bench").await;
                });
            });
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = uncontended, rwlock_shared
}

/// One of the compared locks, as the hand-off harness uses it.
enum Contender {
    Ours(LockClient),
    Reference(PollLock),
}

enum Held {
    Ours(chainlock::distributed::DistributedGuard),
    Reference,
}

impl Contender {
    async fn lock(&self, name: &str) -> Held {
        match self {
            Self::Ours(locks) => Held::Ours(locks.lock(name).await.unwrap()),
            Self::Reference(poll) => {
                poll.lock(name).await;
                Held::Reference
            }
        }
    }

    async fn unlock(&self, name: &str, held: Held) {
        match (self, held) {
            (_, Held::Ours(guard)) => guard.release().await.unwrap(),
            (Self::Reference(poll), Held::Reference) => poll.unlock(name).await,
            (Self::Ours(_), Held::Reference) => unreachable!(),
        }
    }
}

/// Hand-offs between two clients: the holder releases at `t0`, the waiter (already waiting)
/// holds at `t1`. Returns the sorted `t1 - t0`.
fn hand_offs<F, Fut>(make: F, samples: usize, wait_first: fn(u64) -> Duration) -> Vec<Duration>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Contender>,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let name = "hand-off";
    let mut latencies: Vec<Duration> = rt.block_on(async {
        // Made on this runtime, which drives their connections.
        let (holder, waiter) = (
            std::sync::Arc::new(make().await),
            std::sync::Arc::new(make().await),
        );
        let mut latencies = Vec::with_capacity(samples);
        for sample in 0..samples as u64 {
            let held = holder.lock(name).await;
            let task = {
                let waiter = std::sync::Arc::clone(&waiter);
                tokio::spawn(async move {
                    let held = waiter.lock(name).await;
                    let holding = Instant::now();
                    waiter.unlock(name, held).await;
                    holding
                })
            };
            tokio::time::sleep(wait_first(sample)).await;
            let released = Instant::now();
            holder.unlock(name, held).await;
            latencies.push(task.await.unwrap() - released);
        }
        latencies
    });
    latencies.sort();
    latencies
}

/// The `per_mille`‰ percentile (nearest rank) of sorted samples.
fn percentile(sorted: &[Duration], per_mille: usize) -> Duration {
    sorted[((sorted.len() - 1) * per_mille).div_ceil(1000)]
}

fn report(label: &str, sorted: &[Duration]) {
    println!(
        "hand-off {label:<34} p50 {:>10.3?}  p99 {:>10.3?}  ({} samples)",
        percentile(sorted, 500),
        percentile(sorted, 990),
        sorted.len()
    );
}

fn hand_off_latency() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: run a few samples only.
    let full = std::env::args().any(|arg| arg == "--bench");
    let (ours, reference) = if full { (300, 30) } else { (3, 2) };
    let settle = |_: u64| Duration::from_millis(5);
    let dir = scratch();
    let file = || async { Contender::Ours(LockClient::file(&dir).unwrap()) };
    report("file", &hand_offs(file, ours, settle));
    let _ = std::fs::remove_dir_all(&dir);
    if let Some(url) = pg_url() {
        let pg = || async { Contender::Ours(LockClient::postgres(&url).await.unwrap()) };
        report("postgres/chainlock", &hand_offs(pg, ours, settle));
        let poll = || async { Contender::Reference(PollLock::connect(&url).await) };
        // Release at a pseudo-random phase of the waiter's 100 ms polling period.
        let phase = |sample: u64| {
            Duration::from_millis(100 + (sample.wrapping_mul(0x9E37_79B9) >> 7) % 100)
        };
        report(
            "postgres/reference poll (100 ms)",
            &hand_offs(poll, reference, phase),
        );
    }
}

/// The etcd cluster's endpoints, from `CHAINLOCK_ETCD_ENDPOINTS` (set by `scripts/etcd.sh`); in
/// CI a missing cluster is an error, elsewhere the etcd parts are skipped with a notice.
#[cfg(feature = "etcd")]
fn etcd_endpoints() -> Option<String> {
    if let Ok(endpoints) = std::env::var("CHAINLOCK_ETCD_ENDPOINTS") {
        return Some(endpoints);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CHAINLOCK_ETCD_ENDPOINTS is not set in CI (scripts/test.sh starts a cluster)"
    );
    eprintln!("notice: CHAINLOCK_ETCD_ENDPOINTS is not set; skipping the etcd benchmarks");
    None
}

/// Uncontended acquire + release cycles of one client on a free name: sorted durations.
#[cfg(feature = "etcd")]
fn cycles<F, Fut>(make: F, samples: usize) -> Vec<Duration>
where
    F: Fn() -> Fut,
    Fut: Future<Output = LockClient>,
{
    let rt = runtime();
    let mut durations: Vec<Duration> = rt.block_on(async {
        let locks = make().await;
        let mut durations = Vec::with_capacity(samples);
        for _ in 0..samples {
            let start = Instant::now();
            let guard = locks.lock("uncontended").await.unwrap();
            guard.release().await.unwrap();
            durations.push(start.elapsed());
        }
        durations
    });
    durations.sort();
    durations
}

/// Go's `concurrency.Mutex` through `go-mutex bench` (`CHAINLOCK_ETCD_GO_MUTEX`, built by
/// `scripts/etcd.sh`): `((uncontended p50, p99), (hand-off p50, p99))`. In CI a missing program
/// is an error, elsewhere the Go figures are skipped with a notice.
#[cfg(feature = "etcd")]
#[allow(
    clippy::type_complexity,
    reason = "two pairs of percentiles, read once"
)]
fn go_mutex_bench(
    endpoints: &str,
    samples: usize,
) -> Option<((Duration, Duration), (Duration, Duration))> {
    let Ok(program) = std::env::var("CHAINLOCK_ETCD_GO_MUTEX") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CHAINLOCK_ETCD_GO_MUTEX is not set in CI (scripts/etcd.sh builds it)"
        );
        eprintln!("notice: CHAINLOCK_ETCD_GO_MUTEX is not set; skipping Go's mutex");
        return None;
    };
    let out = std::process::Command::new(program)
        .args(["bench", endpoints, &samples.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "go-mutex bench: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let pair = |label: &str| {
        let line = text
            .lines()
            .find_map(|line| line.strip_prefix(label))
            .unwrap_or_else(|| panic!("go-mutex bench printed no {label:?}: {text:?}"));
        let nanos: Vec<u64> = line
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        (
            Duration::from_nanos(nanos[0]),
            Duration::from_nanos(nanos[1]),
        )
    };
    Some((pair("uncontended "), pair("hand-off ")))
}

/// etcd's lock written directly on `etcd-client`, as a user without chainlock would: one lease
/// granted and kept alive (TTL 60 s, a keep-alive every 3 s), and per cycle either a
/// put-if-absent transaction on the name with the lease and a delete (two writes through Raft,
/// as Go's `concurrency.Mutex` on its session), or etcd's `Lock` and `Unlock` RPCs with the
/// lease (the server runs Go's Mutex).
#[cfg(feature = "etcd")]
struct EtcdRecipe {
    client: etcd_client::Client,
    lease: i64,
    keeper: tokio::task::JoinHandle<()>,
}

#[cfg(feature = "etcd")]
impl EtcdRecipe {
    /// Connects and grants the lease (on the current runtime, which then keeps it alive).
    async fn connect(endpoints: &str) -> Self {
        let mut client =
            etcd_client::Client::connect(endpoints.split(',').collect::<Vec<_>>(), None)
                .await
                .unwrap();
        let lease = client.lease_grant(60, None).await.unwrap().id();
        let (mut keeper, mut stream) = client.lease_keep_alive(lease).await.unwrap();
        let keeper = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(3)).await;
                if keeper.keep_alive().await.is_err() || stream.message().await.is_err() {
                    return;
                }
            }
        });
        Self {
            client,
            lease,
            keeper,
        }
    }

    /// Put-if-absent with the lease, then delete: one uncontended cycle.
    async fn cycle_txn(&self, name: &str) {
        use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
        let mut client = self.client.clone();
        let txn = Txn::new()
            .when([Compare::create_revision(name, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                name,
                "",
                Some(PutOptions::new().with_lease(self.lease)),
            )]);
        assert!(client.txn(txn).await.unwrap().succeeded(), "{name} is free");
        client.delete(name, None).await.unwrap();
    }

    /// `Lock` with the lease, then `Unlock`: one uncontended cycle.
    async fn cycle_lock_rpc(&self, name: &str) {
        let mut client = self.client.clone();
        let locked = client
            .lock(
                name,
                Some(etcd_client::LockOptions::new().with_lease(self.lease)),
            )
            .await
            .unwrap();
        client.unlock(locked.key()).await.unwrap();
    }
}

#[cfg(feature = "etcd")]
impl Drop for EtcdRecipe {
    fn drop(&mut self) {
        self.keeper.abort();
    }
}

/// chainlock's uncontended lock + release on etcd beside the recipes written on `etcd-client`
/// directly ([`EtcdRecipe`]), each on a client made once (a lease kept alive).
#[cfg(feature = "etcd")]
fn uncontended_etcd(c: &mut Criterion) {
    let Some(endpoints) = etcd_endpoints() else {
        return;
    };
    let rt = runtime();
    let mut group = c.benchmark_group("uncontended_etcd");
    let ours = rt.block_on(LockClient::etcd(endpoints.split(','))).unwrap();
    group.bench_function("chainlock", |b| {
        b.iter(|| {
            rt.block_on(async {
                ours.lock(black_box("bench-etcd-chainlock"))
                    .await
                    .unwrap()
                    .release()
                    .await
                    .unwrap();
            });
        });
    });
    // Each recipe on a lease granted for it (criterion's analysis between benchmarks does not
    // drive the runtime, hence no keep-alive then).
    let recipe = rt.block_on(EtcdRecipe::connect(&endpoints));
    group.bench_function("recipe_txn", |b| {
        b.iter(|| rt.block_on(recipe.cycle_txn(black_box("bench-etcd-recipe-txn"))));
    });
    let recipe = rt.block_on(EtcdRecipe::connect(&endpoints));
    group.bench_function("recipe_lock_rpc", |b| {
        b.iter(|| rt.block_on(recipe.cycle_lock_rpc(black_box("bench-etcd-recipe-lock"))));
    });
    group.finish();
}

#[cfg(feature = "etcd")]
criterion_group! {
    name = etcd_benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    targets = uncontended_etcd
}

/// chainlock against the put-if-absent recipe again, in alternating rounds (each side's
/// cycles in a round, then the other's, the side that goes first alternating), so that a load
/// that drifts during the run falls on both: prints each side's median of its rounds' medians
/// and the ratio.
#[cfg(feature = "etcd")]
fn etcd_uncontended_interleaved(endpoints: &str) {
    let full = std::env::args().any(|arg| arg == "--bench");
    let (rounds, cycles) = if full { (20, 50) } else { (1, 2) };
    let rt = runtime();
    let (ours, theirs) = rt.block_on(async {
        let ours = LockClient::etcd(endpoints.split(',')).await.unwrap();
        let recipe = EtcdRecipe::connect(endpoints).await;
        let median = |mut durations: Vec<Duration>| {
            durations.sort();
            durations[durations.len() / 2]
        };
        let (mut ours_medians, mut theirs_medians) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            for side in [round % 2, 1 - round % 2] {
                let mut took = Vec::with_capacity(cycles);
                for _ in 0..cycles {
                    let start = Instant::now();
                    if side == 0 {
                        ours.lock("bench-etcd-interleaved-chainlock")
                            .await
                            .unwrap()
                            .release()
                            .await
                            .unwrap();
                    } else {
                        recipe.cycle_txn("bench-etcd-interleaved-recipe").await;
                    }
                    took.push(start.elapsed());
                }
                if side == 0 {
                    ours_medians.push(median(took));
                } else {
                    theirs_medians.push(median(took));
                }
            }
        }
        (median(ours_medians), median(theirs_medians))
    });
    println!(
        "uncontended lock + release, alternating rounds ({rounds} × {cycles} cycles each): \
         chainlock {ours:.3?}, put-if-absent recipe on etcd-client {theirs:.3?}, ratio {:.2}",
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
}

/// etcd beside PostgreSQL: hand-off latency and uncontended cycles.
#[cfg(feature = "etcd")]
fn etcd_side_by_side() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let samples = if full { 200 } else { 3 };
    let Some(endpoints) = etcd_endpoints() else {
        return;
    };
    etcd_uncontended_interleaved(&endpoints);
    let etcd = || async { LockClient::etcd(endpoints.split(',')).await.unwrap() };
    let settle = |_: u64| Duration::from_millis(5);
    report(
        "etcd/chainlock",
        &hand_offs(|| async { Contender::Ours(etcd().await) }, samples, settle),
    );
    let print = |label: &str, sorted: &[Duration]| {
        println!(
            "uncontended lock + release {label:<20} p50 {:>10.3?}  p99 {:>10.3?}  ({} samples)",
            percentile(sorted, 500),
            percentile(sorted, 990),
            sorted.len()
        );
    };
    print("etcd", &cycles(etcd, samples));
    if let Some((uncontended, hand_off)) = go_mutex_bench(&endpoints, samples) {
        println!(
            "hand-off {:<34} p50 {:>10.3?}  p99 {:>10.3?}  ({samples} samples)",
            "etcd/Go concurrency.Mutex", hand_off.0, hand_off.1
        );
        println!(
            "uncontended lock + release {:<20} p50 {:>10.3?}  p99 {:>10.3?}  ({samples} samples)",
            "etcd/Go Mutex", uncontended.0, uncontended.1
        );
    }
    if let Some(url) = pg_url() {
        let pg = || async { LockClient::postgres(&url).await.unwrap() };
        print("postgres", &cycles(pg, samples));
    }
}

fn main() {
    benches();
    #[cfg(feature = "etcd")]
    etcd_benches();
    Criterion::default().configure_from_args().final_summary();
    hand_off_latency();
    #[cfg(feature = "etcd")]
    etcd_side_by_side();
    semaphore_hand_off_latency();
    rwlock_shared_interleaved();
}

/// The shared-mode comparison again, robust to a machine whose load drifts between criterion's
/// benchmarks and whose round trip depends on where the scheduler puts each server backend
/// (on this 2-vCPU VM one connection can be 3x slower than another for its whole life): rounds
/// of 200 acquire + release cycles alternate between raw `pg_advisory_lock_shared` and
/// chainlock's `lock_shared` (and the mutex pair, for scale), each side rotating over four
/// connections (four raw connections, four clients); prints the median of the rounds' means.
fn rwlock_shared_interleaved() {
    let Some(url) = pg_url() else { return };
    let full = std::env::args().any(|arg| arg == "--bench");
    let (rounds, cycles) = if full { (15, 200) } else { (1, 2) };
    let rt = runtime();
    let means = rt.block_on(async {
        let mut clients = Vec::new();
        let mut raws = Vec::new();
        for _ in 0..4 {
            clients.push(LockClient::postgres(&url).await.unwrap());
            let (raw, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let mut prepared = Vec::new();
            for text in [
                "SELECT pg_advisory_lock_shared($1)",
                "SELECT pg_advisory_unlock_shared($1)",
                "SELECT pg_advisory_lock($1)",
                "SELECT pg_advisory_unlock($1)",
            ] {
                prepared.push(raw.prepare(text).await.unwrap());
            }
            raws.push((raw, prepared));
        }
        let mut means: Vec<Vec<Duration>> = vec![Vec::new(); 4];
        for round in 0..rounds * 4 {
            let ours = &clients[round % 4];
            let (raw, prepared) = &raws[round % 4];
            for (kind, means) in means.iter_mut().enumerate() {
                let start = Instant::now();
                for _ in 0..cycles {
                    match kind {
                        0 | 2 => {
                            raw.query_one(&prepared[kind], &[&black_box(46_i64)])
                                .await
                                .unwrap();
                            raw.query_one(&prepared[kind + 1], &[&black_box(46_i64)])
                                .await
                                .unwrap();
                        }
                        1 => ours
                            .lock_shared(black_box("bench-interleaved"))
                            .await
                            .unwrap()
                            .release()
                            .await
                            .unwrap(),
                        _ => ours
                            .lock(black_box("bench-interleaved"))
                            .await
                            .unwrap()
                            .release()
                            .await
                            .unwrap(),
                    }
                }
                means.push(start.elapsed() / cycles);
            }
        }
        means
    });
    let labels = [
        "raw pg_advisory_lock_shared + unlock_shared",
        "chainlock lock_shared + release",
        "raw pg_advisory_lock + unlock",
        "chainlock lock + release",
    ];
    let mut medians = Vec::new();
    for (label, mut means) in labels.iter().zip(means) {
        means.sort();
        let median = means[means.len() / 2];
        medians.push(median);
        println!(
            "interleaved {label:<44} median {median:>10.3?}  ({} rounds of {cycles})",
            rounds * 4
        );
    }
    println!(
        "interleaved shared: chainlock / raw = {:.2}x; mutex: {:.2}x",
        medians[1].as_secs_f64() / medians[0].as_secs_f64(),
        medians[3].as_secs_f64() / medians[2].as_secs_f64()
    );
}

/// The reader-writer lock's shared mode: one shared acquire + release of a free name, against
/// raw `pg_advisory_lock_shared` / `pg_advisory_unlock_shared` (prepared) on one connection.
fn rwlock_shared(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("rwlock_shared");
    let dir = scratch().join("rw");
    let file = LockClient::file(&dir).unwrap();
    group.bench_function("file", |b| {
        b.iter(|| {
            rt.block_on(async {
                let guard = file.lock_shared(black_box("bench")).await.unwrap();
                guard.release().await.unwrap();
            });
        });
    });
    if let Some(url) = pg_url() {
        let ours = rt.block_on(LockClient::postgres(&url)).unwrap();
        group.bench_function("postgres/chainlock", |b| {
            b.iter(|| {
                rt.block_on(async {
                    let guard = ours.lock_shared(black_box("bench")).await.unwrap();
                    guard.release().await.unwrap();
                });
            });
        });
        let (raw, lock, unlock) = rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let lock = client
                .prepare("SELECT pg_advisory_lock_shared($1)")
                .await
                .unwrap();
            let unlock = client
                .prepare("SELECT pg_advisory_unlock_shared($1)")
                .await
                .unwrap();
            (client, lock, unlock)
        });
        group.bench_function("postgres/raw_advisory_lock_shared", |b| {
            b.iter(|| {
                rt.block_on(async {
                    raw.query_one(&lock, &[&black_box(44_i64)]).await.unwrap();
                    raw.query_one(&unlock, &[&black_box(44_i64)]).await.unwrap();
                });
            });
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Semaphore hand-offs: a holder takes all `permits` permits, a waiter (another client,
/// already waiting) asks for one; from the holder starting to give them back (`t0`) to the
/// waiter holding (`t1`). Returns the sorted `t1 - t0`.
fn semaphore_hand_offs<F, Fut>(make: F, permits: usize, samples: usize) -> Vec<Duration>
where
    F: Fn() -> Fut,
    Fut: Future<Output = LockClient>,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut latencies: Vec<Duration> = rt.block_on(async {
        let name = format!("semaphore-hand-off-{permits}");
        let holder = make().await.semaphore(&name, permits);
        let waiter = make().await.semaphore(&name, permits);
        let mut latencies = Vec::with_capacity(samples);
        for _ in 0..samples {
            let mut held = Vec::new();
            for _ in 0..permits {
                held.push(holder.acquire().await.unwrap());
            }
            let task = {
                let waiter = waiter.clone();
                tokio::spawn(async move {
                    let permit = waiter.acquire().await.unwrap();
                    let holding = Instant::now();
                    permit.release().await.unwrap();
                    holding
                })
            };
            tokio::time::sleep(Duration::from_millis(5)).await;
            let released = Instant::now();
            for permit in held {
                permit.release().await.unwrap();
            }
            latencies.push(task.await.unwrap() - released);
        }
        latencies
    });
    latencies.sort();
    latencies
}

fn semaphore_hand_off_latency() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let samples = if full { 200 } else { 3 };
    let dir = scratch().join("semaphore");
    for permits in [1, 4] {
        let file = || async { LockClient::file(&dir).unwrap() };
        report(
            &format!("semaphore/{permits} file"),
            &semaphore_hand_offs(file, permits, samples),
        );
        if let Some(url) = pg_url() {
            let pg = || async { LockClient::postgres(&url).await.unwrap() };
            report(
                &format!("semaphore/{permits} postgres"),
                &semaphore_hand_offs(pg, permits, samples),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
