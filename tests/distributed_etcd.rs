//! The etcd backend against a real three-member cluster (`scripts/etcd.sh`, started by
//! `scripts/test.sh`): exclusion, FIFO, tokens, `etcdctl lock` in both directions, a holder
//! killed with `kill -9`, a holder stopped past its TTL, the leader member killed, a stopped or
//! cut-off member, one lease per client (shared by its holds, its loss told to each),
//! acquisitions cancelled at random points, a cut-off holder healed.

mod distributed_common;

use chainlock::distributed::{EtcdOptions, LockClient};
use distributed_common::{runtime, unique, wait_for};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The leader-kill test runs alone (it takes this exclusively, every other test shares it), so
/// that the other tests' timings are not the election's.
static CLUSTER: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn shared_cluster() -> std::sync::RwLockReadGuard<'static, ()> {
    CLUSTER
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn endpoints() -> String {
    std::env::var("CHAINLOCK_ETCD_ENDPOINTS").expect(
        "CHAINLOCK_ETCD_ENDPOINTS is not set: run the tests through scripts/test.sh, or \
         `bash scripts/etcd.sh cargo test --features etcd --test distributed_etcd` (scripts/etcd.sh starts a cluster)",
    )
}

fn member(args: &[&str]) -> String {
    let script = std::env::var("CHAINLOCK_ETCD_MEMBER")
        .expect("CHAINLOCK_ETCD_MEMBER is not set: run the tests through scripts/etcd.sh");
    let out = Command::new(script).args(args).output().unwrap();
    assert!(out.status.success(), "member {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

async fn client(ttl: u64) -> LockClient {
    LockClient::etcd_with(EtcdOptions::new(endpoints().split(',')).ttl(Duration::from_secs(ttl)))
        .await
        .unwrap()
}

/// The keys under `name/`, in create-revision order.
fn queue(name: &str) -> Vec<String> {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            &format!("--endpoints={}", endpoints()),
            "get",
            &format!("{name}/"),
            "--prefix",
            "--keys-only",
            "--sort-by=CREATE",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "etcdctl get: {out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        kill_and_reap(&mut self.0);
    }
}

fn kill_and_reap(child: &mut Child) {
    // SIGCONT first, in case it was stopped.
    Command::new("kill")
        .args(["-CONT", &child.id().to_string()])
        .status()
        .ok();
    child.kill().ok();
    child.wait().ok();
}

fn worker(args: &[&str]) -> (Killed, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_distributed-worker"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (Killed(child), out)
}

fn read_held(out: &mut impl BufRead) -> u64 {
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    line.trim()
        .strip_prefix("held ")
        .unwrap_or_else(|| panic!("worker said {line:?}"))
        .parse()
        .unwrap()
}

#[test]
fn exclusion_under_contention_with_increasing_tokens() {
    let _cluster = shared_cluster();
    let name = unique("etcd-contention");
    runtime().block_on(async {
        let inside = Arc::new(AtomicUsize::new(0));
        let tokens = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let locks = client(5).await;
            for _ in 0..2 {
                let (locks, name, inside, tokens) =
                    (locks.clone(), name.clone(), inside.clone(), tokens.clone());
                tasks.push(tokio::spawn(async move {
                    for _ in 0..8 {
                        let guard = locks.lock(&name).await.unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                        tokens.lock().unwrap().push(guard.token().get());
                        tokio::task::yield_now().await;
                        assert!(!guard.is_lost());
                        assert_eq!(inside.fetch_sub(1, Ordering::SeqCst), 1, "two holders");
                        guard.release().await.unwrap();
                    }
                }));
            }
        }
        for task in tasks {
            task.await.unwrap();
        }
        let tokens = tokens.lock().unwrap();
        assert_eq!(tokens.len(), 48);
        assert!(
            tokens.windows(2).all(|pair| pair[0] < pair[1]),
            "tokens not strictly increasing: {tokens:?}"
        );
    });
    assert!(queue(&name).is_empty(), "keys left behind");
}

#[test]
fn waiters_are_served_first_come_first_served() {
    let _cluster = shared_cluster();
    let name = unique("etcd-fifo");
    runtime().block_on(async {
        let locks = client(5).await;
        let first = locks.lock(&name).await.unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..4 {
            let (locks, name2, order) = (locks.clone(), name.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let guard = locks.lock(&name2).await.unwrap();
                order.lock().unwrap().push((i, guard.token().get()));
                guard.release().await.unwrap();
            }));
            // The next waiter starts only once this one is in the queue.
            let name3 = name.clone();
            tokio::task::spawn_blocking(move || {
                wait_for("the waiter's key", Duration::from_secs(10), || {
                    queue(&name3).len() == i + 2
                });
            })
            .await
            .unwrap();
        }
        assert!(order.lock().unwrap().is_empty());
        let t0 = first.token().get();
        first.release().await.unwrap();
        for task in tasks {
            task.await.unwrap();
        }
        let order = order.lock().unwrap();
        assert_eq!(
            order.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            [0, 1, 2, 3],
            "not FIFO: {order:?}"
        );
        assert!(order.iter().all(|(_, token)| *token > t0));
    });
}

#[test]
fn try_lock_and_timeouts() {
    let _cluster = shared_cluster();
    let name = unique("etcd-try");
    runtime().block_on(async {
        let locks = client(5).await;
        let guard = locks.try_lock(&name).await.unwrap().expect("free");
        assert!(locks.try_lock(&name).await.unwrap().is_none());
        let start = Instant::now();
        assert!(
            locks
                .try_lock_for(&name, Duration::from_millis(300))
                .await
                .unwrap()
                .is_none()
        );
        assert!(start.elapsed() >= Duration::from_millis(300));
        // Nothing of the failed attempts stays queued: only the holder's key.
        assert_eq!(queue(&name).len(), 1);
        guard.release().await.unwrap();
        assert!(locks.try_lock(&name).await.unwrap().is_some());
    });
}

fn etcdctl_lock(name: &str) -> (Killed, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        // A short session TTL: should its revocation on SIGINT not get through (seen once
        // under load), the name is free 3 s later all the same, not after the default 10 s.
        .args([
            &format!("--endpoints={}", endpoints()),
            "lock",
            "--ttl=3",
            name,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (Killed(child), out)
}

#[test]
fn etcdctl_lock_and_chainlock_exclude_each_other() {
    let _cluster = shared_cluster();
    let name = unique("etcd-etcdctl");
    runtime().block_on(async {
        let locks = client(5).await;
        // chainlock first: etcdctl queues behind it and gets the name on release.
        let guard = locks.lock(&name).await.unwrap();
        let ours = queue(&name);
        assert_eq!(ours.len(), 1);
        assert!(
            ours[0]
                .strip_prefix(&format!("{name}/"))
                .is_some_and(|id| u64::from_str_radix(id, 16).is_ok()),
            "not etcdctl's layout: {ours:?}"
        );
        let (mut etcdctl, mut out) = etcdctl_lock(&name);
        let name2 = name.clone();
        tokio::task::spawn_blocking(move || {
            wait_for("etcdctl's key", Duration::from_secs(10), || {
                queue(&name2).len() == 2
            });
        })
        .await
        .unwrap();
        assert!(etcdctl.0.try_wait().unwrap().is_none());
        let token = guard.token().get();
        guard.release().await.unwrap();
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            (line, out)
        })
        .await
        .unwrap();
        let (line, _out) = line;
        assert!(
            line.starts_with(&format!("{name}/")),
            "etcdctl printed {line:?}"
        );
        // etcdctl holds: chainlock waits.
        assert!(locks.try_lock(&name).await.unwrap().is_none());
        assert!(
            locks
                .try_lock_for(&name, Duration::from_millis(300))
                .await
                .unwrap()
                .is_none()
        );
        // etcdctl unlocks on SIGINT (its session ends); chainlock gets the name.
        Command::new("kill")
            .args(["-INT", &etcdctl.0.id().to_string()])
            .status()
            .unwrap();
        let guard = locks
            .try_lock_for(&name, Duration::from_secs(15))
            .await
            .unwrap()
            .expect("the name after etcdctl");
        assert!(guard.token().get() > token);
        etcdctl.0.wait().ok();
    });
}

#[test]
fn killed_holder_frees_the_name_within_its_ttl() {
    let _cluster = shared_cluster();
    let name = unique("etcd-kill9");
    let (mut holder, mut out) = worker(&["hold", "etcd", &endpoints(), &name]);
    let token = read_held(&mut out);
    runtime().block_on(async {
        let locks = client(5).await;
        assert!(locks.try_lock(&name).await.unwrap().is_none());
        holder.0.kill().unwrap();
        holder.0.wait().unwrap();
        let killed = Instant::now();
        let guard = locks
            .try_lock_for(&name, Duration::from_secs(15))
            .await
            .unwrap()
            .expect("the name after the holder's lease expired");
        let after = killed.elapsed();
        // The worker's lease TTL is 2 s: the server expires it within about that (its expiry
        // check runs every 500 ms; a lease is revoked by a proposal through Raft).
        assert!(after < Duration::from_secs(6), "took {after:?}");
        assert!(guard.token().get() > token);
        eprintln!("kill -9 of a holder (TTL 2 s): the waiter held after {after:?}");
    });
}

#[test]
fn stopped_holder_knows_it_lost_before_anyone_else_holds() {
    let _cluster = shared_cluster();
    let name = unique("etcd-sigstop");
    let (holder, mut out) = worker(&["hold-report", "etcd", &endpoints(), &name, "2"]);
    let mut holder = holder;
    let token = read_held(&mut out);
    let ask = |child: &mut Child, out: &mut BufReader<_>| {
        let stdin = child.stdin.as_mut().unwrap();
        stdin.write_all(b"?\n").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        BufRead::read_line(out, &mut line).unwrap();
        line.trim().to_owned()
    };
    assert_eq!(ask(&mut holder.0, &mut out), "lost false");
    let pid = holder.0.id().to_string();
    Command::new("kill").args(["-STOP", &pid]).status().unwrap();
    let stopped = Instant::now();
    runtime().block_on(async {
        let locks = client(5).await;
        let guard = locks
            .try_lock_for(&name, Duration::from_secs(15))
            .await
            .unwrap()
            .expect("the name after the stopped holder's lease expired");
        eprintln!(
            "SIGSTOP of a holder (TTL 2 s): the waiter held after {:?}",
            stopped.elapsed()
        );
        assert!(guard.token().get() > token);
        // The holder's loss is a function of its clock: once resumed it says lost, and it
        // would have said so at any moment after its deadline (sent + TTL − margin), which
        // is before the server could expire the lease.
        Command::new("kill").args(["-CONT", &pid]).status().unwrap();
        assert_eq!(ask(&mut holder.0, &mut out), "lost true");
    });
}

/// Starts a killed member again when dropped.
struct Restart(String);

impl Drop for Restart {
    fn drop(&mut self) {
        member(&["start", &self.0]);
    }
}

#[test]
fn leader_killed_while_locks_are_held_and_waited_for() {
    let _alone = CLUSTER
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = unique("etcd-leader");
    wait_for("a leader", Duration::from_secs(30), has_leader);
    let leader = member(&["leader"]);
    runtime().block_on(async {
        let inside = Arc::new(AtomicUsize::new(0));
        let tokens = Arc::new(std::sync::Mutex::new(Vec::new()));
        let done = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..3 {
            // The default TTL (10 s): it outlives the election.
            let locks = LockClient::etcd(endpoints().split(',')).await.unwrap();
            let (name, inside, tokens, done) =
                (name.clone(), inside.clone(), tokens.clone(), done.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..12 {
                    let guard = locks.lock(&name).await.unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                    tokens.lock().unwrap().push(guard.token().get());
                    tokio::time::sleep(Duration::from_millis(30)).await; // the work
                    assert!(!guard.is_lost(), "a holder lost its lease in the election");
                    assert_eq!(inside.fetch_sub(1, Ordering::SeqCst), 1, "two holders");
                    guard.release().await.unwrap();
                    done.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
        let done2 = done.clone();
        let leader2 = leader.clone();
        tokio::task::spawn_blocking(move || {
            wait_for("some holds", Duration::from_secs(30), || {
                done2.load(Ordering::SeqCst) >= 6
            });
            // The guard first: a panic from here on starts the member again.
            let restart = Restart(leader2);
            member(&["kill", &restart.0]);
            let killed = Instant::now();
            wait_for("a new leader", Duration::from_secs(30), has_leader);
            eprintln!(
                "leader {} killed: a new leader after {:?}",
                restart.0,
                killed.elapsed()
            );
        })
        .await
        .unwrap();
        for task in tasks {
            task.await.unwrap();
        }
        let tokens = tokens.lock().unwrap();
        assert_eq!(tokens.len(), 36);
        assert!(
            tokens.windows(2).all(|pair| pair[0] < pair[1]),
            "tokens not strictly increasing: {tokens:?}"
        );
    });
    wait_for("the member back", Duration::from_secs(30), || {
        Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args([
                &format!("--endpoints={}", member(&["endpoint", &leader])),
                "endpoint",
                "health",
            ])
            .output()
            .is_ok_and(|out| out.status.success())
    });
}

#[test]
fn readers_share_writers_exclude_in_arrival_order() {
    let _cluster = shared_cluster();
    let name = unique("etcd-rw");
    runtime().block_on(async {
        let locks = client(5).await;
        let writer = locks.lock(&name).await.unwrap();
        let w0 = writer.token().get();
        writer.release().await.unwrap();
        let r1 = locks.lock_shared(&name).await.unwrap();
        let r2 = locks
            .try_lock_shared(&name)
            .await
            .unwrap()
            .expect("readers share");
        assert!(r1.token().get() >= w0 && r2.token().get() >= w0);
        assert!(
            locks.try_lock(&name).await.unwrap().is_none(),
            "readers exclude a writer"
        );
        // A writer queues behind the readers; a reader arriving after it waits behind it.
        let (l2, n2) = (locks.clone(), name.clone());
        let writer = tokio::spawn(async move { l2.lock(&n2).await.unwrap() });
        let n3 = name.clone();
        tokio::task::spawn_blocking(move || {
            wait_for("the writer's key", Duration::from_secs(10), || {
                queue(&n3).len() == 3
            });
        })
        .await
        .unwrap();
        assert!(
            locks
                .try_lock_shared_for(&name, Duration::from_millis(300))
                .await
                .unwrap()
                .is_none(),
            "a reader overtook a waiting writer"
        );
        let (l3, n4) = (locks.clone(), name.clone());
        let late_reader = tokio::spawn(async move { l3.lock_shared(&n4).await.unwrap() });
        let (r1_token, r2_token) = (r1.token().get(), r2.token().get());
        r1.release().await.unwrap();
        r2.release().await.unwrap();
        let writer = writer.await.unwrap();
        let readers = [r1_token, r2_token];
        assert!(
            readers.iter().all(|&t| writer.token().get() > t),
            "a later writer's token is above the readers'"
        );
        assert!(
            !late_reader.is_finished(),
            "a reader held beside the writer"
        );
        let wt = writer.token().get();
        writer.release().await.unwrap();
        let late = late_reader.await.unwrap();
        assert!(
            late.token().get() >= wt,
            "a reader's token is at least the last writer's"
        );
        // etcdctl lock (exclusive) waits for readers too: the reader's key is under NAME/
        // (`NAME/r<lease>`, or `NAME/r<lease>-<n>` for a client's further hold at once: no
        // other name's range holds it).
        let first = &queue(&name)[0];
        let rest = first
            .strip_prefix(&format!("{name}/r"))
            .expect("a reader's key");
        let (lease, nth) = rest.split_once('-').unwrap_or((rest, "1"));
        assert!(
            lease.bytes().all(|b| b.is_ascii_hexdigit()) && nth.parse::<u32>().is_ok_and(|n| n > 0),
            "{first}"
        );
    });
}

#[test]
fn semaphore_and_several_names_work_through_the_seam() {
    let _cluster = shared_cluster();
    let name = unique("etcd-sem");
    runtime().block_on(async {
        let locks = client(5).await;
        let semaphore = locks.semaphore(&name, 2);
        let a = semaphore.acquire().await.unwrap();
        let b = semaphore
            .try_acquire()
            .await
            .unwrap()
            .expect("a second permit");
        assert_ne!(a.slot(), b.slot());
        assert!(
            semaphore.try_acquire().await.unwrap().is_none(),
            "two permits only"
        );
        drop(a);
        let c = semaphore
            .try_acquire_for(Duration::from_secs(10))
            .await
            .unwrap()
            .expect("the freed permit");
        drop((b, c));

        let (first, second) = (unique("etcd-all-x"), unique("etcd-all-y"));
        let all = locks
            .lock_all([first.as_str(), second.as_str()])
            .await
            .unwrap();
        assert!(locks.try_lock(&second).await.unwrap().is_none());
        assert!(
            locks
                .try_lock_all([second.as_str(), first.as_str()])
                .await
                .unwrap()
                .is_none()
        );
        drop(all);
        assert!(
            locks
                .try_lock_all_for([second.as_str(), first.as_str()], Duration::from_secs(10))
                .await
                .unwrap()
                .is_some()
        );
    });
}

/// Continues every member when dropped.
struct Continue(Vec<String>);

impl Drop for Continue {
    fn drop(&mut self) {
        for n in &self.0 {
            member(&["cont", n]);
        }
    }
}

#[test]
fn majority_stopped_acquisitions_fail_in_time_and_holders_are_told() {
    let _alone = CLUSTER
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = unique("etcd-majority");
    runtime().block_on(async {
        let options = EtcdOptions::new(endpoints().split(','))
            .ttl(Duration::from_secs(3))
            .request_timeout(Duration::from_secs(2));
        let locks = LockClient::etcd_with(options).await.unwrap();
        let guard = locks.lock(&name).await.unwrap();
        let stopped = Continue(vec!["1".into(), "2".into()]);
        for n in &stopped.0 {
            member(&["stop", n]);
        }
        let start = Instant::now();
        let error = locks
            .try_lock_for(unique("etcd-majority-other").as_str(), Duration::from_secs(1))
            .await
            .expect_err("no quorum: the acquisition fails");
        let took = start.elapsed();
        assert!(
            matches!(error, chainlock::distributed::Error::EtcdUnresponsive { .. }),
            "{error}"
        );
        assert!(took < Duration::from_secs(5), "took {took:?}");
        // The holder is told within its TTL (3 s): keep-alives go unanswered.
        tokio::time::timeout(Duration::from_secs(5), guard.lost())
            .await
            .expect("the holder was told");
        assert!(guard.is_lost());
        eprintln!(
            "majority stopped: an acquisition failed after {took:?} ({error}); the holder was told after {:?}",
            start.elapsed()
        );
        drop(stopped);
        drop(guard);
    });
    wait_for("a leader again", Duration::from_secs(30), has_leader);
}

/// Whether the cluster has a leader now.
fn has_leader() -> bool {
    Command::new(std::env::var("CHAINLOCK_ETCD_MEMBER").unwrap())
        .arg("leader")
        .output()
        .is_ok_and(|out| out.status.success())
}

#[test]
fn stalled_holder_says_lost_before_the_name_is_given_away() {
    let _cluster = shared_cluster();
    let name = unique("etcd-stalled");
    // The holder's client lives on a runtime that is never driven again once it holds: no
    // keep-alive is sent, as in a process stopped or paused; only the clock tells the loss.
    let stalled = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let guard = stalled.block_on(async { client(2).await.lock(&name).await.unwrap() });
    let guard = Arc::new(guard);
    let watcher = {
        let guard = guard.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            while !guard.is_lost() {
                assert!(Instant::now() < deadline, "never said lost");
                std::thread::sleep(Duration::from_millis(2));
            }
            Instant::now()
        })
    };
    let held = runtime().block_on(async {
        let locks = client(5).await;
        let other = locks
            .try_lock_for(&name, Duration::from_secs(20))
            .await
            .unwrap()
            .expect("the name after the stalled holder's lease expired");
        let held = Instant::now();
        other.release().await.unwrap();
        held
    });
    let lost = watcher.join().unwrap();
    assert!(
        lost < held,
        "another client held the name before the holder said lost"
    );
    eprintln!(
        "stalled holder (TTL 2 s, margin 0.5 s): said lost {:?} before another client held the name",
        held - lost
    );
    drop(guard);
    drop(stalled);
}

/// `(endpoint, password)` of the auth-enabled member of `scripts/etcd.sh` (users `root` and
/// `locks`; `locks` may read and write keys under `locks/` only).
fn auth_member() -> (String, String) {
    let var = |name: &str| {
        std::env::var(name)
            .unwrap_or_else(|_| panic!("{name} is not set: run the tests through scripts/etcd.sh"))
    };
    (
        var("CHAINLOCK_ETCD_AUTH_ENDPOINT"),
        var("CHAINLOCK_ETCD_AUTH_PASSWORD"),
    )
}

#[test]
fn a_user_with_the_right_password_locks_on_an_auth_enabled_cluster() {
    let (endpoint, password) = auth_member();
    let name = format!("locks/{}", unique("etcd-auth"));
    runtime().block_on(async {
        let options = |user: &str| {
            EtcdOptions::new([endpoint.clone()])
                .ttl(Duration::from_secs(5))
                .user(user, password.clone())
        };
        let locks = LockClient::etcd_with(options("locks")).await.unwrap();
        let guard = locks.lock(&name).await.unwrap();
        // Another authenticated client (root) is excluded, and sees the key.
        let root = LockClient::etcd_with(options("root")).await.unwrap();
        assert!(root.try_lock(&name).await.unwrap().is_none());
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args([
                &format!("--endpoints={endpoint}"),
                &format!("--user=root:{password}"),
                "get",
                &format!("{name}/"),
                "--prefix",
                "--keys-only",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "etcdctl get: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&format!("{name}/")),
            "{out:?}"
        );
        let token = guard.token().get();
        guard.release().await.unwrap();
        let next = root
            .try_lock(&name)
            .await
            .unwrap()
            .expect("a released name");
        assert!(next.token().get() > token);
        next.release().await.unwrap();
        // The user's rights hold: outside `locks/`, etcd says no (the lease it took is revoked).
        let refused = locks
            .try_lock(&unique("etcd-auth-outside"))
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains("permission denied"),
            "{refused:?}"
        );
    });
}

#[test]
fn a_wrong_password_or_no_user_is_refused_quickly_with_a_typed_error() {
    let (endpoint, _) = auth_member();
    runtime().block_on(async {
        let options = EtcdOptions::new([endpoint.clone()])
            .connect_timeout(Duration::from_secs(20))
            .user("locks", "not the password");
        let start = Instant::now();
        let refused = LockClient::etcd_with(options).await.unwrap_err();
        let took = start.elapsed();
        assert!(
            matches!(&refused, chainlock::distributed::Error::EtcdAuthentication(message)
                if message.contains("authentication failed")),
            "{refused:?}"
        );
        // Refused at once, not retried until the connect timeout.
        assert!(took < Duration::from_secs(5), "refused after {took:?}");
        eprintln!("wrong password refused after {took:?}: {refused}");
        // No credentials at all: the first lock is refused, typed, just as fast.
        let anonymous = LockClient::etcd_with(EtcdOptions::new([endpoint]))
            .await
            .unwrap();
        let start = Instant::now();
        let refused = anonymous.try_lock("locks/anonymous").await.unwrap_err();
        assert!(
            matches!(
                &refused,
                chainlock::distributed::Error::EtcdAuthentication(_)
            ),
            "{refused:?}"
        );
        assert!(start.elapsed() < Duration::from_secs(5), "{refused:?}");
    });
}

/// Go's own `concurrency.Mutex` on `name` (scripts/go-mutex, built by scripts/etcd.sh): its
/// stdin (a line or its close unlocks) and its lines, read by a thread.
fn go_mutex(
    name: &str,
) -> (
    Killed,
    std::process::ChildStdin,
    std::sync::mpsc::Receiver<String>,
) {
    let program = std::env::var("CHAINLOCK_ETCD_GO_MUTEX").expect(
        "CHAINLOCK_ETCD_GO_MUTEX is not set: run the tests through scripts/etcd.sh (it builds Go's mutex client)",
    );
    let mut child = Command::new(program)
        .args([&endpoints(), name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    (Killed(child), stdin, received)
}

#[test]
fn go_concurrency_mutex_and_chainlock_exclude_each_other() {
    let _cluster = shared_cluster();
    let name = unique("etcd-go");
    runtime().block_on(async {
        let locks = client(5).await;
        // chainlock holds: Go's mutex queues behind it (a second key under the name) and
        // does not hold until chainlock releases.
        let guard = locks.lock(&name).await.unwrap();
        let (go, mut stdin, lines) = go_mutex(&name);
        let first = lines.recv_timeout(Duration::from_secs(20)).unwrap();
        assert_eq!(first, "waiting");
        let name2 = name.clone();
        tokio::task::spawn_blocking(move || {
            wait_for("the Go mutex's key", Duration::from_secs(10), || {
                queue(&name2).len() == 2
            });
        })
        .await
        .unwrap();
        assert!(
            lines.try_recv().is_err(),
            "the Go mutex held while chainlock did"
        );
        let token = guard.token().get();
        guard.release().await.unwrap();
        let held = tokio::task::spawn_blocking(move || {
            let line = lines.recv_timeout(Duration::from_secs(10));
            (line, lines)
        })
        .await
        .unwrap();
        let (held, lines) = held;
        let held = held.expect("the Go mutex holds after chainlock's release");
        let mut words = held.split(' ');
        assert_eq!(words.next(), Some("held"), "{held:?}");
        let key = words.next().unwrap();
        assert!(key.starts_with(&format!("{name}/")), "{held:?}");
        let revision: u64 = words.next().unwrap().parse().unwrap();
        assert!(revision > token, "{held:?} after token {token}");
        // Go holds: chainlock waits, and gets the name once Go unlocks.
        assert!(locks.try_lock(&name).await.unwrap().is_none());
        let waiter = {
            let (locks, name) = (locks.clone(), name.clone());
            tokio::spawn(async move { locks.try_lock_for(&name, Duration::from_secs(15)).await })
        };
        let name2 = name.clone();
        tokio::task::spawn_blocking(move || {
            wait_for(
                "chainlock's key behind Go's",
                Duration::from_secs(10),
                || queue(&name2).len() == 2,
            );
        })
        .await
        .unwrap();
        assert!(!waiter.is_finished(), "chainlock held while Go did");
        writeln!(stdin, "unlock").unwrap();
        let guard = waiter
            .await
            .unwrap()
            .unwrap()
            .expect("the name after the Go mutex unlocked");
        assert!(guard.token().get() > revision);
        let released = lines.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(released, "released");
        guard.release().await.unwrap();
        drop(go);
    });
}

#[test]
fn an_unreachable_cluster_is_unresponsive_within_the_connect_timeout_with_or_without_a_user() {
    // A port nobody listens on (bound, then released): connections are refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    runtime().block_on(async {
        for user in [false, true] {
            let mut options = EtcdOptions::new([format!("http://127.0.0.1:{port}")])
                .connect_timeout(Duration::from_secs(1));
            if user {
                // Connecting authenticates: retried within the bound too, not failed at once.
                options = options.user("locks", "secret");
            }
            let start = Instant::now();
            let error = LockClient::etcd_with(options).await.unwrap_err();
            let took = start.elapsed();
            assert!(
                matches!(
                    error,
                    chainlock::distributed::Error::EtcdUnresponsive {
                        operation: "connect",
                        ..
                    }
                ),
                "user {user}: {error:?}"
            );
            assert!(
                took >= Duration::from_millis(900) && took < Duration::from_secs(4),
                "user {user}: after {took:?}"
            );
        }
    });
}

/// Whether `name` nests in `ancestor` by etcd's own layout: a hold of `name` has its key in
/// `ancestor/`'s range, so `ancestor`'s acquisitions wait for it (as `etcdctl lock` does).
fn nests_in(name: &str, ancestor: &str) -> bool {
    name.len() > ancestor.len()
        && name.starts_with(ancestor)
        && name.as_bytes()[ancestor.len()] == b'/'
}

#[test]
fn hostile_names_never_exclude_each_other_but_by_etcds_nesting() {
    let _cluster = shared_cluster();
    let base = unique("etcd-hostile");
    let long = "x".repeat(4000);
    // Each name below `base` (so that no other test's keys are in any range).
    let suffixes = [
        "", "/read", "/r", "/r1", "/", "//b", "/..", "..", "\0", "\0read", "/\0", "/a", &long,
    ];
    let names: Vec<String> = suffixes.iter().map(|s| format!("{base}{s}")).collect();
    runtime().block_on(async {
        let holder = client(10).await;
        let other = client(10).await;
        let start = Instant::now();
        let mut checked = 0;
        for held in &names {
            for held_shared in [false, true] {
                let guard = if held_shared {
                    holder.lock_shared(held.as_str()).await.unwrap()
                } else {
                    holder.lock(held.as_str()).await.unwrap()
                };
                // One try at a time: tries of nested names at once would exclude each other.
                let mut outcomes = Vec::new();
                for tried in names.iter().filter(|tried| *tried != held) {
                    for tried_shared in [false, true] {
                        let got = if tried_shared {
                            other.try_lock_shared(tried.as_str()).await.unwrap()
                        } else {
                            other.try_lock(tried.as_str()).await.unwrap()
                        };
                        let free = got.is_some();
                        if let Some(got) = got {
                            got.release().await.unwrap();
                        }
                        outcomes.push((tried, tried_shared, free));
                    }
                }
                for (tried, tried_shared, free) in outcomes {
                    let expected = !nests_in(held, tried);
                    assert_eq!(
                        free,
                        expected,
                        "{} of {:?} while {:?} is held {}: {}",
                        if tried_shared {
                            "a shared try"
                        } else {
                            "a try"
                        },
                        tried.get(..80).unwrap_or(tried),
                        held.get(..80).unwrap_or(held),
                        if held_shared { "shared" } else { "exclusively" },
                        if expected {
                            "should be free"
                        } else {
                            "should wait (etcd's nesting)"
                        },
                    );
                    checked += 1;
                }
                guard.release().await.unwrap();
            }
        }
        eprintln!(
            "hostile names: {checked} pairs of distinct names and modes checked in {:?}",
            start.elapsed()
        );
    });
}

/// p50 and max of `durations`.
fn p50_max(durations: &mut [Duration]) -> (Duration, Duration) {
    durations.sort();
    (
        durations[durations.len() / 2],
        durations[durations.len() - 1],
    )
}

/// `n` cycles of lock + release of free names, round robin over `clients`: p50 and max.
async fn cycles(clients: &[LockClient], name: &str, n: usize) -> (Duration, Duration) {
    let mut durations = Vec::new();
    for i in 0..n {
        let cycle = Instant::now();
        let guard = clients[i % clients.len()]
            .lock(format!("{name}-{i}").as_str())
            .await
            .unwrap();
        guard.release().await.unwrap();
        durations.push(cycle.elapsed());
    }
    p50_max(&mut durations)
}

/// A queued waiter: the holder it waits for, and its task (when it held, and its guard).
type Waiter = (
    chainlock::distributed::DistributedGuard,
    tokio::task::JoinHandle<(Instant, chainlock::distributed::DistributedGuard)>,
);

/// One waiter on each client, each queued behind a holder of another client.
async fn queue_waiters(clients: &[LockClient], name: &str) -> Vec<Waiter> {
    let mut waiters = Vec::new();
    for i in 0..clients.len() {
        let waited = format!("{name}-waited-{i}");
        let holder = clients[(i + 1) % clients.len()]
            .lock(waited.as_str())
            .await
            .unwrap();
        let locks = clients[i].clone();
        let queued = waited.clone();
        let task = tokio::spawn(async move {
            let guard = locks.lock(queued.as_str()).await.unwrap();
            (Instant::now(), guard)
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while queue(&waited).len() < 2 {
            assert!(Instant::now() < deadline, "the waiter never queued");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        waiters.push((holder, task));
    }
    waiters
}

/// Releases each waiter's holder; the longest time from a release to its waiter's hold.
async fn serve_waiters(waiters: Vec<Waiter>) -> Duration {
    let mut longest = Duration::ZERO;
    for (holder, task) in waiters {
        let released = Instant::now();
        holder.release().await.unwrap();
        let (held, guard) = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("a queued waiter was never served")
            .unwrap();
        longest = longest.max(held - released);
        guard.release().await.unwrap();
    }
    longest
}

/// Each of `clients` live etcd clients' telemetry shows `endpoint` unhealthy (the caller runs
/// alone, so no other client of this cluster is alive).
#[cfg(feature = "telemetry")]
fn telemetry_shows_unhealthy(endpoint: &str, clients: usize) {
    let endpoints = chainlock::telemetry::live().endpoints;
    let unhealthy = endpoints
        .iter()
        .filter(|e| {
            e.backend == "etcd"
                && e.address == endpoint
                && e.state == chainlock::telemetry::EndpointState::Unhealthy
                && e.judged_unhealthy >= 1
        })
        .count();
    assert!(
        unhealthy >= clients,
        "{unhealthy} of {clients} clients' telemetry shows {endpoint} unhealthy: {endpoints:#?}"
    );
}

#[test]
fn a_stopped_follower_slows_no_connected_client_and_no_fresh_one() {
    let _alone = CLUSTER
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let leader = member(&["leader"]);
    let follower = ["1", "2", "3"]
        .into_iter()
        .find(|n| *n != leader)
        .unwrap()
        .to_owned();
    let hung = member(&["endpoint", &follower]);
    let all: Vec<String> = endpoints().split(',').map(str::to_owned).collect();
    // Every endpoint first once: one of these clients' current member is the follower.
    let rotations: Vec<Vec<String>> = (0..all.len())
        .map(|first| all[first..].iter().chain(&all[..first]).cloned().collect())
        .collect();
    let name = unique("etcd-hung-follower");
    runtime().block_on(async {
        let mut clients = Vec::new();
        for endpoints in &rotations {
            let options = EtcdOptions::new(endpoints.clone()).ttl(Duration::from_secs(3));
            clients.push(LockClient::etcd_with(options).await.unwrap());
        }
        // Holders on healthy leases, one per client, kept through the stop.
        let mut holders = Vec::new();
        for (i, locks) in clients.iter().enumerate() {
            holders.push(
                locks
                    .lock(format!("{name}-held-{i}").as_str())
                    .await
                    .unwrap(),
            );
        }
        // The same cycles with every member healthy, for comparison.
        let (healthy_p50, healthy_max) = cycles(&clients, &format!("{name}-healthy"), 30).await;
        // A waiter per client, queued (its watch open on its client's member) before the stop.
        let waiters = queue_waiters(&clients, &name).await;
        let stopped = Continue(vec![follower.clone()]);
        member(&["stop", &follower]);
        let start = Instant::now();
        let (p50, max) = cycles(&clients, &name, 30).await;
        // Which member is unhealthy shows in Debug: at once where a request went to it, else
        // once the prober asked it (every second by default, 500 ms to answer).
        let unhealthy = format!("{hung:?}: \"unhealthy\"");
        let judged = Instant::now();
        for locks in &clients {
            while !format!("{locks:?}").contains(&unhealthy) {
                assert!(judged.elapsed() < Duration::from_secs(3), "{locks:?}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let judged = judged.elapsed();
        // And in the telemetry's live view.
        #[cfg(feature = "telemetry")]
        telemetry_shows_unhealthy(&hung, clients.len());
        // A fresh client with the hung member listed first connects in about a round trip.
        let mut fresh_endpoints = vec![hung.clone()];
        fresh_endpoints.extend(all.iter().filter(|e| **e != hung).cloned());
        let connecting = Instant::now();
        let fresh = LockClient::etcd_with(EtcdOptions::new(fresh_endpoints))
            .await
            .unwrap();
        let connected = connecting.elapsed();
        let (_, fresh_max) = cycles(&[fresh], &format!("{name}-fresh"), 5).await;
        // The waiters' watches moved off the stopped member: each is served on its release.
        let served = serve_waiters(waiters).await;
        // The holders outlive their TTL (3 s) with the follower stopped: never told lost.
        tokio::time::sleep_until((start + Duration::from_millis(3500)).into()).await;
        for holder in &holders {
            assert!(
                !holder.is_lost(),
                "a holder on a healthy lease was told lost"
            );
        }
        eprintln!(
            "every member healthy: lock + release p50 {healthy_p50:?}, max {healthy_max:?}; \
             follower {follower} stopped: p50 {p50:?}, max {max:?} (30 cycles each); \
             judged unhealthy by every client within {judged:?} more; a fresh client connected in \
             {connected:?}, its first 5 cycles max {fresh_max:?}; queued waiters served within \
             {served:?} of the release"
        );
        // Bounds relative to this run's healthy cycles or to the 500 ms attempt timeout, not
        // absolute latencies: a loaded machine's cycles take 50–80 ms, not 12–25 (seen).
        // Without the move to healthy members, most cycles would pay the attempt timeout.
        assert!(
            served < Duration::from_secs(2),
            "a waiter served after {served:?}"
        );
        let bound = (healthy_p50 * 3).max(Duration::from_millis(50));
        assert!(p50 < bound, "p50 {p50:?}, healthy {healthy_p50:?}");
        assert!(max < Duration::from_secs(2), "max {max:?}");
        // A fresh client does not wait for the hung member's attempt timeout to connect.
        assert!(
            connected < Duration::from_millis(500),
            "connected in {connected:?}"
        );
        assert!(
            fresh_max < Duration::from_secs(2),
            "fresh max {fresh_max:?}"
        );
        drop(stopped);
        for holder in holders {
            holder.release().await.unwrap();
        }
    });
    wait_for("a leader again", Duration::from_secs(30), has_leader);
}

/// Packets of the processes of one user id to some members' ports dropped both ways
/// (iptables: that uid's packets to the ports, and the replies on its connections, marked with
/// CONNMARK), until dropped. Matches the test's own worker processes only (they run as that
/// uid, which no other process uses); touches no other address or process.
struct Cut {
    uid: u32,
    ports: Vec<String>,
}

impl Cut {
    fn rules(&self, add: bool) -> Vec<Vec<String>> {
        let op = if add { "-A" } else { "-D" };
        let (uid, comment) = (self.uid.to_string(), format!("chainlock-test-{}", self.uid));
        let mut rules = vec![vec![
            "-t",
            "mangle",
            op,
            "OUTPUT",
            "-m",
            "owner",
            "--uid-owner",
            &uid,
            "-m",
            "comment",
            "--comment",
            &comment,
            "-j",
            "CONNMARK",
            "--set-mark",
            &uid,
        ]]
        .into_iter()
        .map(|rule| rule.into_iter().map(str::to_owned).collect::<Vec<_>>())
        .collect::<Vec<_>>();
        for port in &self.ports {
            for rule in [
                vec![
                    op,
                    "OUTPUT",
                    "-p",
                    "tcp",
                    "-d",
                    "127.0.0.1",
                    "--dport",
                    port,
                    "-m",
                    "owner",
                    "--uid-owner",
                    &uid,
                    "-m",
                    "comment",
                    "--comment",
                    &comment,
                    "-j",
                    "DROP",
                ],
                vec![
                    op,
                    "INPUT",
                    "-p",
                    "tcp",
                    "-s",
                    "127.0.0.1",
                    "--sport",
                    port,
                    "-m",
                    "connmark",
                    "--mark",
                    &uid,
                    "-m",
                    "comment",
                    "--comment",
                    &comment,
                    "-j",
                    "DROP",
                ],
            ] {
                rules.push(rule.into_iter().map(str::to_owned).collect());
            }
        }
        rules
    }

    /// Cuts the processes of `uid` from the members `members` (1..3).
    fn new(uid: u32, members: &[&str]) -> Self {
        let ports = members
            .iter()
            .map(|n| {
                member(&["endpoint", n])
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        let cut = Self { uid, ports };
        for rule in cut.rules(true) {
            let out = Command::new("iptables")
                .arg("-w")
                .args(&rule)
                .output()
                .expect("iptables (the partition tests need it: scripts/etcd.sh installs it)");
            assert!(out.status.success(), "iptables {rule:?}: {out:?}");
        }
        cut
    }
}

impl Drop for Cut {
    fn drop(&mut self) {
        for rule in self.rules(false) {
            Command::new("iptables").arg("-w").args(&rule).output().ok();
        }
    }
}

/// A user id no process uses, for one test's workers (`offset` tells the tests apart).
fn test_uid(offset: u32) -> u32 {
    200_000 + (std::process::id() % 100_000) * 4 + offset
}

/// A worker process running as `uid` (so that only it is cut by a [`Cut`] for `uid`).
fn worker_as(uid: u32, args: &[&str]) -> (Killed, BufReader<std::process::ChildStdout>) {
    let id = uid.to_string();
    let mut child = Command::new("setpriv")
        .args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_distributed-worker"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("setpriv (util-linux)");
    let out = BufReader::new(child.stdout.take().unwrap());
    (Killed(child), out)
}

/// Sends `line` to the worker and reads its answer.
fn ask(child: &mut Child, out: &mut impl BufRead, line: &str) -> String {
    let stdin = child.stdin.as_mut().unwrap();
    writeln!(stdin, "{line}").unwrap();
    stdin.flush().unwrap();
    let mut answer = String::new();
    out.read_line(&mut answer).unwrap();
    answer.trim().to_owned()
}

/// Waits until the `cycles` worker's client judges every member healthy; panics after 10 s
/// (a member whose link came back must be used again; measured: 0.45–1.3 s after a cut of
/// 1 or 8 s, a probe interval and a probe). Returns how long it took.
fn every_member_healthy(child: &mut Child, out: &mut impl BufRead) -> Duration {
    let start = Instant::now();
    wait_for(
        "the client to judge all 3 members healthy after the cut was lifted",
        Duration::from_secs(10),
        || {
            let answer = ask(child, out, "health");
            let healthy = answer.matches("\"healthy\"").count();
            if healthy < 3 && start.elapsed() > Duration::from_secs(5) {
                eprintln!(
                    "{healthy} of 3 members healthy {:?} after the cut: {answer}",
                    start.elapsed()
                );
            }
            healthy == 3
        },
    );
    start.elapsed()
}

#[test]
fn a_client_cut_from_one_member_keeps_locking() {
    let _cluster = shared_cluster();
    let uid = test_uid(0);
    let name = unique("etcd-cut-one");
    let (mut worker, mut out) = worker_as(uid, &["cycles", "etcd", &endpoints(), &name]);
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready", "the worker could not connect");
    // Each member in turn: one of them is the member the client was using. Before each cut,
    // the client must see every member healthy again (the member cut before is back): else the
    // next cut would leave it with one member, not two.
    for n in ["1", "2", "3"] {
        let healed = every_member_healthy(&mut worker.0, &mut out);
        eprintln!("every member healthy again {healed:?} after the last cut");
        let cut = Cut::new(uid, &[n]);
        let answer = ask(&mut worker.0, &mut out, "30");
        drop(cut);
        let numbers: Vec<u64> = answer
            .strip_prefix("cycles ")
            .unwrap_or_else(|| panic!("worker said {answer:?}"))
            .split(' ')
            .map(|x| x.parse().unwrap())
            .collect();
        let (p50, max, errors, slow) = (
            Duration::from_micros(numbers[0]),
            Duration::from_micros(numbers[1]),
            numbers[2],
            numbers[3],
        );
        eprintln!(
            "cut from member {n}: lock + release p50 {p50:?}, max {max:?}, {errors} errors, \
             {slow} cycles of 500 ms or more (30 cycles)"
        );
        // Never: an error, or a request that waited its whole bound (5 s).
        assert_eq!(errors, 0, "cut from member {n}");
        assert!(
            max < Duration::from_secs(5),
            "cut from member {n}: max {max:?}"
        );
        // The client moves off the cut member: at most a few cycles pay the 500 ms attempt
        // timeout (the first, and one per probe that finds the member cut), not all 30. Counted,
        // not timed against a bound, so a loaded machine's slower cycles do not fail it
        // (p50 was 12–25 ms idle, 70–80 ms beside another cluster and a build).
        assert!(slow <= 3, "cut from member {n}: {slow} slow cycles");
    }
    let healed = every_member_healthy(&mut worker.0, &mut out);
    eprintln!("every member healthy again {healed:?} after the last cut");
}

/// A holder cut from every member is told lost before anyone else holds its name; once the
/// links heal, it still says lost (never holding again by itself), locks again only after the
/// new holder released, with a higher token: no two holders overlap.
#[test]
fn a_holder_cut_from_every_member_is_told_lost_before_anyone_else_holds() {
    let _cluster = shared_cluster();
    let uid = test_uid(1);
    let name = unique("etcd-cut-all");
    let (mut holder, mut out) = worker_as(uid, &["hold-report", "etcd", &endpoints(), &name, "2"]);
    let token = read_held(&mut out);
    assert_eq!(ask(&mut holder.0, &mut out, "?"), "lost false");
    let cut = Cut::new(uid, &["1", "2", "3"]);
    let cut_at = Instant::now();
    // The holder is asked every 10 ms whether it lost, until it says so.
    let asking = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if ask(&mut holder.0, &mut out, "?") == "lost true" {
                return (Instant::now(), holder, out);
            }
            assert!(
                Instant::now() < deadline,
                "the cut-off holder never said lost"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let rt = runtime();
    let locks = rt.block_on(client(5));
    let guard = rt
        .block_on(locks.try_lock_for(&name, Duration::from_secs(20)))
        .unwrap()
        .expect("the name after the cut-off holder's lease expired");
    let held = Instant::now();
    assert!(guard.token().get() > token);
    let (lost, mut holder, mut out) = asking.join().unwrap();
    assert!(
        lost < held,
        "another client held the name before the cut-off holder said lost"
    );
    eprintln!(
        "holder cut from every member (TTL 2 s, margin 0.5 s): said lost {:?} after the cut, \
         {:?} before another client held the name",
        lost - cut_at,
        held - lost
    );
    // Healed: the old holder still says lost, and its release says so.
    drop(cut);
    let healed = Instant::now();
    assert_eq!(ask(&mut holder.0, &mut out, "?"), "lost true");
    let released = ask(&mut holder.0, &mut out, "relock");
    assert!(
        released.starts_with("released ") && released != "released ok",
        "the lost hold's release said {released:?}"
    );
    // It locks again, on a new lease: it queues behind the holder and waits (its answer comes
    // when it holds).
    let (said, answers) = std::sync::mpsc::channel();
    let reading = std::thread::spawn(move || {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        said.send((line.trim().to_owned(), Instant::now())).ok();
        (holder, out)
    });
    wait_for(
        "the healed holder's key queued behind the new holder's",
        Duration::from_secs(15),
        || queue(&name).len() == 2,
    );
    let queued = healed.elapsed();
    assert!(
        answers.try_recv().is_err(),
        "the healed holder held while another client held"
    );
    let token = guard.token().get();
    // The hold ends when the server deletes its key, before `release` returns: the healed
    // holder may say `held` before that, never before the release was asked.
    let releasing = Instant::now();
    rt.block_on(guard.release()).unwrap();
    let (line, at) = answers
        .recv_timeout(Duration::from_secs(15))
        .expect("the healed holder held after the release");
    let relocked: u64 = line
        .strip_prefix("held ")
        .unwrap_or_else(|| panic!("the healed holder said {line:?}"))
        .parse()
        .unwrap();
    assert!(relocked > token, "token {relocked} after {token}");
    eprintln!(
        "healed: the old holder queued again {queued:?} after the heal and held {:?} after the \
         other's release was asked, token {relocked} > {token}",
        at.checked_duration_since(releasing)
            .expect("the healed holder held before the other's release was asked")
    );
    drop(reading.join().unwrap());
}

/// A client of the etcd crate chainlock uses, for reading keys and leases around chainlock.
async fn raw_client() -> etcd_client::Client {
    etcd_client::Client::connect(endpoints().split(',').collect::<Vec<_>>(), None)
        .await
        .unwrap()
}

/// The keys under `prefix` and their leases, in create-revision order.
async fn keys_and_leases(raw: &mut etcd_client::Client, prefix: &str) -> Vec<(String, i64)> {
    let options = etcd_client::GetOptions::new()
        .with_prefix()
        .with_keys_only()
        .with_sort(
            etcd_client::SortTarget::Create,
            etcd_client::SortOrder::Ascend,
        );
    raw.get(prefix, Some(options))
        .await
        .unwrap()
        .kvs()
        .iter()
        .map(|kv| (kv.key_str().unwrap().to_owned(), kv.lease()))
        .collect()
}

/// Waits (on the runtime) until `condition` holds for the keys under `prefix`, within `limit`;
/// returns them.
async fn wait_for_keys(
    raw: &mut etcd_client::Client,
    prefix: &str,
    what: &str,
    limit: Duration,
    condition: impl Fn(&[(String, i64)]) -> bool,
) -> Vec<(String, i64)> {
    let deadline = Instant::now() + limit;
    loop {
        let keys = keys_and_leases(raw, prefix).await;
        if condition(&keys) {
            return keys;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {keys:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The one lease of the `count` keys under `prefix` but `except` (checked: they share it,
/// etcd lists it, and its keys are exactly these).
async fn one_lease(raw: &mut etcd_client::Client, prefix: &str, except: &str, count: usize) -> i64 {
    let keys = keys_and_leases(raw, prefix).await;
    let ours: Vec<&(String, i64)> = keys.iter().filter(|key| key.0 != except).collect();
    assert_eq!(ours.len(), count, "{keys:?}");
    let lease = ours[0].1;
    assert!(
        ours.iter().all(|key| key.1 == lease),
        "holds on several leases: {keys:?}"
    );
    // etcd's own view: the lease exists and has exactly these keys.
    assert!(
        raw.leases()
            .await
            .unwrap()
            .leases()
            .iter()
            .any(|status| status.id() == lease)
    );
    let attached = raw
        .lease_time_to_live(
            lease,
            Some(etcd_client::LeaseTimeToLiveOptions::new().with_keys()),
        )
        .await
        .unwrap();
    let mut attached: Vec<String> = attached
        .keys()
        .iter()
        .map(|key| String::from_utf8(key.clone()).unwrap())
        .collect();
    attached.sort();
    let mut expected: Vec<String> = ours.iter().map(|key| key.0.clone()).collect();
    expected.sort();
    assert_eq!(attached, expected);
    lease
}

/// One lease per client, as etcd's `concurrency.Session`: every hold and waiter of a client is a
/// key on one lease (two holds of one name have keys of their own); when that lease is lost,
/// every hold on it is told, a waiter queues again under the client's next lease, and later
/// holds get that lease.
#[test]
fn holds_of_a_client_share_one_lease_and_all_are_told_of_its_loss() {
    let _cluster = shared_cluster();
    let base = unique("etcd-one-lease");
    runtime().block_on(async {
        let mut raw = raw_client().await;
        let locks = client(3).await;
        let other = client(3).await;
        let mut guards = Vec::new();
        for i in 0..16 {
            guards.push(locks.lock(format!("{base}/x{i}").as_str()).await.unwrap());
        }
        for _ in 0..3 {
            guards.push(
                locks
                    .lock_shared(format!("{base}/shared").as_str())
                    .await
                    .unwrap(),
            );
        }
        // A waiter of this client behind another client's hold.
        let queued = format!("{base}/queued");
        let blocker = other.lock(queued.as_str()).await.unwrap();
        let waiter = tokio::spawn({
            let (locks, queued) = (locks.clone(), queued.clone());
            async move { locks.lock(queued.as_str()).await }
        });
        let line = wait_for_keys(
            &mut raw,
            &format!("{queued}/"),
            "the waiter's key",
            Duration::from_secs(10),
            |keys| keys.len() == 2,
        )
        .await;
        let lease = one_lease(&mut raw, &format!("{base}/"), &line[0].0, 16 + 3 + 1).await;
        assert!(guards.iter().all(|guard| !guard.is_lost()));

        // The lease is revoked behind the client's back: every hold is told.
        let revoked = Instant::now();
        raw.lease_revoke(lease).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), async {
            for guard in &guards {
                guard.lost().await;
            }
        })
        .await
        .expect("every hold told of its lease's loss");
        let told = revoked.elapsed();
        assert!(
            guards
                .iter()
                .all(chainlock::distributed::DistributedGuard::is_lost)
        );
        // The waiter queued again, under the client's next lease.
        let line = wait_for_keys(
            &mut raw,
            &format!("{queued}/"),
            "the waiter queued again",
            Duration::from_secs(10),
            |keys| keys.len() == 2 && keys[1].1 != lease,
        )
        .await;
        let next = line[1].1;
        // Later holds take that lease; the names of the lost holds are free.
        let later = locks
            .try_lock(format!("{base}/x0").as_str())
            .await
            .unwrap()
            .expect("free after its holder's lease was revoked");
        let keys = keys_and_leases(&mut raw, &format!("{base}/x0/")).await;
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].1, next, "not on the client's next lease");
        assert!(matches!(
            guards.pop().unwrap().release().await,
            Err(chainlock::distributed::Error::Lost)
        ));
        // The waiter is served at the blocker's release.
        let token = blocker.token();
        blocker.release().await.unwrap();
        let served = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the waiter served")
            .unwrap()
            .unwrap();
        assert!(served.token() > token);
        assert!(!served.is_lost() && !later.is_lost());
        served.release().await.unwrap();
        later.release().await.unwrap();
        drop(guards);
        wait_for_keys(
            &mut raw,
            &format!("{base}/"),
            "no key left",
            Duration::from_secs(10),
            <[_]>::is_empty,
        )
        .await;
        eprintln!("a client's lease revoked: its 19 holds were told after {told:?}");
    });
}

/// A lock future cancelled at any point (granting the lease, putting its key, reading the
/// queue, watching its predecessor), and guards dropped without a release, leave no key behind
/// on the client's lease, which lives on.
#[test]
fn acquisitions_cancelled_at_random_points_leave_no_key_behind() {
    let _cluster = shared_cluster();
    let base = unique("etcd-cancel");
    runtime().block_on(async {
        let mut raw = raw_client().await;
        let locks = client(5).await;
        let other = client(5).await;
        let held = format!("{base}/held");
        let holder = other.lock(held.as_str()).await.unwrap();
        let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ u64::from(std::process::id());
        let (mut cancelled, mut completed) = (0, 0);
        for i in 0..60 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // 0 to 30 ms: an uncontended cycle takes a few (more under load); the first also
            // grants the lease.
            let delay = Duration::from_micros(state % 30_000);
            let name = if i % 2 == 0 {
                held.clone()
            } else {
                format!("{base}/free{i}")
            };
            if let Ok(guard) = tokio::time::timeout(delay, locks.lock(name.as_str())).await {
                drop(guard.unwrap());
                completed += 1;
            } else {
                cancelled += 1;
            }
        }
        let holder_key = keys_and_leases(&mut raw, &format!("{held}/")).await[0].clone();
        wait_for_keys(
            &mut raw,
            &format!("{base}/"),
            "only the holder's key",
            Duration::from_secs(10),
            |keys| keys == [holder_key.clone()],
        )
        .await;
        // The client goes on: it queues behind the holder and holds at its release.
        let token = holder.token();
        let waiter = tokio::spawn({
            let (locks, held) = (locks.clone(), held.clone());
            async move { locks.lock(held.as_str()).await }
        });
        wait_for_keys(
            &mut raw,
            &format!("{held}/"),
            "the waiter's key",
            Duration::from_secs(10),
            |keys| keys.len() == 2,
        )
        .await;
        holder.release().await.unwrap();
        let guard = waiter.await.unwrap().unwrap();
        assert!(guard.token() > token);
        guard.release().await.unwrap();
        assert!(
            keys_and_leases(&mut raw, &format!("{base}/"))
                .await
                .is_empty()
        );
        eprintln!("{cancelled} acquisitions cancelled, {completed} completed: no key left");
    });
}
