//! Leader election on the file backend and on PostgreSQL (the server of `scripts/pg.sh`), with
//! real processes: a leader killed with `kill -9` (a standby leads; the dead leader is never
//! reported as the leader), a paused file leader that keeps leading (the file backend's
//! documented limit), proclaim and resign, election names apart from lock names, an observer,
//! campaigns cancelled at random points. etcd's election: `distributed_election_etcd.rs`.

mod distributed_common;

use chainlock::distributed::{LockClient, PostgresOptions};
use distributed_common::{Scratch, pg_url, runtime, unique, wait_for, worker};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Stdio};
use std::time::{Duration, Instant};

/// A worker leading `name` of `backend` at `target`: killed (SIGCONT first) and reaped on drop.
struct LeaderWorker {
    child: Child,
    out: BufReader<ChildStdout>,
    token: u64,
}

impl LeaderWorker {
    fn spawn(backend: &str, target: &str, name: &str, value: &str) -> Self {
        Self::spawn_with_ttl(backend, target, name, value, 8)
    }

    /// As [`spawn`](Self::spawn), the worker's `TTL_SECS` given (PostgreSQL: heartbeats every
    /// quarter of it, lost after it, freed by the server after 1.5 times it).
    fn spawn_with_ttl(backend: &str, target: &str, name: &str, value: &str, ttl: u64) -> Self {
        let mut child = worker()
            .args(["campaign", backend, target, name, value, &ttl.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut said = String::new();
        out.read_line(&mut said).unwrap();
        let token = said
            .trim()
            .strip_prefix("leader ")
            .unwrap_or_else(|| panic!("worker said {said:?}"))
            .parse()
            .unwrap();
        Self { child, out, token }
    }

    fn ask(&mut self, question: &str) -> String {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{question}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        line.trim().to_owned()
    }

    fn signal(&self, name: &str) {
        std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status()
            .unwrap();
    }

    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for LeaderWorker {
    fn drop(&mut self) {
        self.signal("CONT");
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn pg_client(url: &str) -> LockClient {
    LockClient::blocking_postgres_with(PostgresOptions::new(url).unwrap()).unwrap()
}

/// The semantics on one backend: a try that loses, timed campaigns, the leader now, proclaim,
/// resign, tokens that increase, and an election of a name apart from the lock of that name.
fn semantics(client: &LockClient, other: &LockClient, name: &str) {
    assert_eq!(client.blocking_leader(name).unwrap(), None);
    let first = client.blocking_campaign(name, "first").unwrap();
    assert!(other.blocking_try_campaign(name, "x").unwrap().is_none());
    assert!(
        other
            .blocking_try_campaign_for(name, "x", Duration::from_millis(30))
            .unwrap()
            .is_none()
    );
    // Elections and locks of one name never meet on this backend.
    let lock = other
        .blocking_try_lock(name)
        .unwrap()
        .expect("the lock of the name is free");
    drop(lock);
    let leader = other.blocking_leader(name).unwrap().expect("a leader");
    assert_eq!(
        (leader.value(), leader.token()),
        (&b"first"[..], first.token())
    );
    first.blocking_proclaim("proclaimed").unwrap();
    assert_eq!(
        other.blocking_leader(name).unwrap().unwrap().value(),
        b"proclaimed"
    );
    let token = first.token();
    first.blocking_resign().unwrap();
    assert_eq!(other.blocking_leader(name).unwrap(), None);
    let second = other
        .blocking_try_campaign_until(name, "second", Instant::now() + Duration::from_secs(5))
        .unwrap()
        .expect("free after the resignation");
    assert!(second.token() > token);
    assert!(!second.is_lost());
    // Dropped: resigned (PostgreSQL on a background task: wait for it).
    drop(second);
    wait_for(
        "the dropped leadership to resign",
        Duration::from_secs(5),
        || client.blocking_leader(name).unwrap().is_none(),
    );
}

#[test]
fn file_semantics() {
    let dir = Scratch::new("election-semantics");
    let (a, b) = (
        LockClient::file(dir.path()).unwrap(),
        LockClient::file(dir.path()).unwrap(),
    );
    semantics(&a, &b, "scheduler");
    // Any name: NUL, a slash, non-ASCII.
    semantics(&a, &b, "sched\0uler/é");
}

#[test]
fn postgres_semantics() {
    let Some(url) = pg_url() else { return };
    let (a, b) = (pg_client(&url), pg_client(&url));
    semantics(&a, &b, &unique("election-semantics"));
    // Any name: NUL (which a `text` column refuses), a slash, non-ASCII.
    semantics(&a, &b, &format!("{}\0/é", unique("election-semantics")));
}

/// `kill -9` of the leader: a standby leads (measured), with a higher token; an observer never
/// sees the dead leader again once it saw the standby, and with no standby the dead leader is
/// not reported as the leader.
fn kill_9(backend: &str, target: &str, client: &LockClient, name: &str) {
    let mut leader = LeaderWorker::spawn(backend, target, name, "worker");
    let seen = client
        .blocking_leader(name)
        .unwrap()
        .expect("the worker leads");
    assert_eq!(
        (seen.value(), seen.token().get()),
        (&b"worker"[..], leader.token)
    );
    let mut leaders = client.blocking_observe(name).unwrap();
    let standby = std::thread::spawn({
        let (client, name) = (client.clone(), name.to_owned());
        move || {
            let leadership = client.blocking_campaign(&name, "standby").unwrap();
            (leadership, Instant::now())
        }
    });
    leader.kill();
    let killed = Instant::now();
    let (leadership, led) = standby.join().unwrap();
    assert!(leadership.token().get() > leader.token);
    let after = led.saturating_duration_since(killed);
    eprintln!("{backend}: kill -9 of the leader: the standby led after {after:?}");
    assert!(after < Duration::from_secs(3), "took {after:?}");
    let mut saw_standby = false;
    while !saw_standby {
        match leaders.blocking_changed().unwrap() {
            Some(leader) if leader.value() == b"standby" => saw_standby = true,
            Some(leader) => assert_eq!(leader.value(), b"worker"),
            None => {}
        }
    }
    leadership.blocking_resign().unwrap();
    // No standby: the dead leader's record is not the leader.
    let mut leader = LeaderWorker::spawn(backend, target, name, "dead");
    leader.kill();
    // PostgreSQL frees a dead session's lock once the server sees the connection closed.
    wait_for(
        "the dead leader to be reported no more",
        Duration::from_secs(5),
        || match client.blocking_leader(name).unwrap() {
            Some(seen) => {
                assert_eq!(seen.value(), b"dead");
                false
            }
            None => true,
        },
    );
    let next = client
        .blocking_try_campaign(name, "after")
        .unwrap()
        .expect("free");
    assert!(next.token().get() > leader.token);
}

#[test]
fn file_a_standby_leads_after_kill_9_of_the_leader() {
    let dir = Scratch::new("election-kill9");
    let target = dir.path().to_str().unwrap().to_owned();
    let client = LockClient::file(dir.path()).unwrap();
    kill_9("file", &target, &client, "compactor");
    // The file backend says it at once: the kernel released `.alive` with the process.
    let mut leader = LeaderWorker::spawn("file", &target, "instant", "dead");
    leader.kill();
    assert_eq!(client.blocking_leader("instant").unwrap(), None);
}

#[test]
fn postgres_a_standby_leads_after_kill_9_of_the_leader() {
    let Some(url) = pg_url() else { return };
    kill_9(
        "postgres",
        &url,
        &pg_client(&url),
        &unique("election-kill9"),
    );
}

/// The file backend's documented limit: a file lock is not lost while its process lives, so a
/// stopped leader keeps leading (failover on process death only).
#[test]
fn file_a_stopped_leader_keeps_leading() {
    let dir = Scratch::new("election-sigstop");
    let target = dir.path().to_str().unwrap().to_owned();
    let client = LockClient::file(dir.path()).unwrap();
    let mut leader = LeaderWorker::spawn("file", &target, "compactor", "stopped");
    leader.signal("STOP");
    assert!(
        client
            .blocking_try_campaign_for("compactor", "standby", Duration::from_millis(300))
            .unwrap()
            .is_none()
    );
    assert_eq!(
        client
            .blocking_leader("compactor")
            .unwrap()
            .unwrap()
            .value(),
        b"stopped"
    );
    leader.signal("CONT");
    assert_eq!(leader.ask("?"), "lost false");
    assert_eq!(leader.ask("resign"), "resigned ok");
    assert!(
        client
            .blocking_try_campaign("compactor", "next")
            .unwrap()
            .is_some()
    );
}

/// SIGSTOP of a PostgreSQL leader past its bounds (heartbeats every 0.5 s answered within
/// 0.5 s: lost after 2 s of silence on its own clock, its session ended by the server after
/// 3 s): the standby leads once the server ends the stopped leader's session, and the leader,
/// resumed, says lost and is refused a proclamation.
#[test]
fn postgres_a_stopped_leader_is_told_lost_before_the_standby_leads() {
    let Some(url) = pg_url() else { return };
    let client = pg_client(&url);
    let name = unique("election-sigstop");
    let mut leader = LeaderWorker::spawn_with_ttl("postgres", &url, &name, "stopped", 2);
    assert_eq!(leader.ask("?"), "lost false");
    leader.signal("STOP");
    let stopped = Instant::now();
    let leadership = client
        .blocking_try_campaign_for(&name, "standby", Duration::from_secs(15))
        .unwrap()
        .expect("the standby leads once the server ended the stopped leader's session");
    let after = stopped.elapsed();
    assert!(leadership.token().get() > leader.token);
    leader.signal("CONT");
    assert_eq!(leader.ask("?"), "lost true");
    assert_eq!(
        leader.ask("proclaim late"),
        "proclaimed the lock was lost before it was released"
    );
    assert_eq!(
        client.blocking_leader(&name).unwrap().unwrap().value(),
        b"standby"
    );
    // The leader's last contact was before the stop: it counted itself lost at most 2 s after
    // the stop, the server freed the lock no earlier than 3 s after that contact.
    eprintln!(
        "postgres: SIGSTOP of the leader (lost after 2 s, freed after 3 s): the standby led {after:?} after the stop, at least {:?} after the leader counted itself lost",
        after.saturating_sub(Duration::from_secs(2))
    );
    assert!(after > Duration::from_secs(2), "{after:?}");
    leadership.blocking_resign().unwrap();
}

/// Campaigns cancelled at random points in their first `within` (while another leads, and on
/// a free name) leave no candidacy behind: the name is free once the leader resigns, and nobody else leads.
fn cancelled(client: &LockClient, other: &LockClient, base: &str, within: Duration) {
    runtime().block_on(async {
        let held = format!("{base}-held");
        let leader = other.campaign(&held, "leader").await.unwrap();
        let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ u64::from(std::process::id());
        let (mut cancelled, mut completed) = (0, 0);
        for i in 0..40 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let delay = Duration::from_micros(state % within.as_micros() as u64);
            let name = if i % 2 == 0 {
                held.clone()
            } else {
                format!("{base}-free")
            };
            match tokio::time::timeout(delay, client.campaign(&name, "c")).await {
                Ok(leadership) => {
                    leadership.unwrap().resign().await.unwrap();
                    completed += 1;
                }
                Err(_) => cancelled += 1,
            }
        }
        assert_eq!(
            client.leader(&held).await.unwrap().unwrap().value(),
            b"leader"
        );
        leader.resign().await.unwrap();
        // Nothing cancelled leads or waits: the names are free (a background resignation of
        // a cancelled win may still be on its way: wait for it).
        for name in [held, format!("{base}-free")] {
            let leadership = client
                .try_campaign_for(&name, "after", Duration::from_secs(5))
                .await
                .unwrap()
                .expect("no cancelled campaign leads");
            leadership.resign().await.unwrap();
            assert_eq!(client.leader(&name).await.unwrap(), None);
        }
        eprintln!("{cancelled} campaigns cancelled, {completed} completed: none left behind");
    });
}

#[test]
fn file_campaigns_cancelled_at_random_points_leave_nothing_behind() {
    let dir = Scratch::new("election-cancel");
    let (a, b) = (
        LockClient::file(dir.path()).unwrap(),
        LockClient::file(dir.path()).unwrap(),
    );
    cancelled(&a, &b, "cancel", Duration::from_millis(20));
}

#[test]
fn postgres_campaigns_cancelled_at_random_points_leave_nothing_behind() {
    let Some(url) = pg_url() else { return };
    let (a, b) = (pg_client(&url), pg_client(&url));
    cancelled(
        &a,
        &b,
        &unique("election-cancel"),
        Duration::from_millis(60),
    );
}
