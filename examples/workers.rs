//! Worker processes append records to one file per data type, each type under its own named
//! lock, with the lock's fencing token; a verifier then checks that no file has interleaved
//! records or tokens out of order.
//!
//! ```text
//! cargo run --example workers                                  # file backend, no set-up
//! cargo run --example workers -- --backend postgres --url postgres://user@host/db
//! cargo run --features etcd --example workers -- --backend etcd --url http://10.0.0.1:2379,http://10.0.0.2:2379
//! cargo run --example workers -- --workers 8 --messages 500 --types orders,users,events
//! cargo run --example workers -- --standbys 2 --messages 300   # one leader per type, standbys
//! cargo run --example workers -- --standbys 2 --pause --backend postgres --url postgres://user@host/db
//! ```
//!
//! Each record is written in several chunks (one `write` each), so two workers writing the
//! same type at once would interleave their chunks. The storage also enforces the fence: a
//! writer whose token is not above the highest token the file has seen is refused, which is
//! what protects data from a holder that lost its lock while paused.
//!
//! With `--standbys N`, each data type gets one writer at a time chosen by leader election:
//! `N + 1` processes per type campaign for `<type>-writer`; the leader appends records with its
//! leadership's token (the storage accepts a token only if it is at least the highest it has
//! seen) until the file holds `--messages` records, then resigns, and the standbys, leading in
//! turn, find nothing left to do. Each type's first leader stops after a third of the records,
//! in the middle of a record (a torn record, as a crash mid-write leaves), and says so with a
//! marker file; the orchestrator checks that observing the election names that worker, and
//! kills it (`kill -9`): a standby takes over (the file backend and PostgreSQL at once, etcd
//! after the lease TTL, 2 s here), drops the torn record, and finishes. The verifier checks
//! that every record is whole, that tokens never decrease (no two leaders wrote at once), and
//! that the failover happened.
//!
//! With `--pause` as well (etcd and PostgreSQL, on Unix), the first data type's first leader
//! is paused instead of killed, at the worst moment: between its loss check and its next
//! record, where it waits until the orchestrator has stopped it (`SIGSTOP`) and resumed it.
//! Its leadership outlives the stop only until its bound (etcd: the lease TTL, 2 s here;
//! PostgreSQL: heartbeats every 0.5 s answered within 1 s here, so the server frees the lock
//! 4.5 s after the last one): a standby leads and writes, and the
//! orchestrator then resumes the paused leader (`SIGCONT`). It goes on with the record it had
//! started, which the storage refuses (its token is below the one the file has seen), then
//! checks its loss signal, finds it lost, and stops: the orchestrator checks both, and the
//! verifier that no record of it came after the standby's. (On the file backend a paused
//! leader keeps leading: a file lock is not lost while its process lives.)

use chainlock::distributed::{FencingToken, Leader, LeaderWatch, LockClient, PostgresOptions};
use clap::{Parser, ValueEnum};
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Backend {
    /// OS file locks in a lock directory (one machine).
    File,
    /// PostgreSQL advisory locks (many machines).
    Postgres,
    /// etcd's lock algorithm on an etcd cluster (many machines; build with `--features etcd`).
    Etcd,
}

#[derive(Parser, Debug)]
#[command(
    about = "Workers append records per data type under named locks; a verifier checks the files"
)]
struct Args {
    /// Lock backend.
    #[arg(long, value_enum, default_value = "file")]
    backend: Backend,
    /// PostgreSQL URL (for `--backend postgres`), or the etcd endpoints, comma-separated (for
    /// `--backend etcd`).
    #[arg(long, required_if_eq_any([("backend", "postgres"), ("backend", "etcd")]))]
    url: Option<String>,
    /// Output directory (a fresh temp directory by default).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Number of worker processes.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Messages per worker.
    #[arg(long, default_value_t = 200)]
    messages: usize,
    /// Data types, one file and one lock each.
    #[arg(long, value_delimiter = ',', default_value = "orders,users,events")]
    types: Vec<String>,
    /// Chunks per record.
    #[arg(long, default_value_t = 4)]
    chunks: usize,
    /// Standbys per data type: elect one writer per type (see the module docs).
    #[arg(long, default_value_t = 0)]
    standbys: usize,
    /// Run as worker number N (used by the orchestrator).
    #[arg(long, hide = true)]
    worker: Option<usize>,
    /// With `--standbys`, on etcd or PostgreSQL: pause the first data type's first leader
    /// past its loss bound (`SIGSTOP`) instead of killing it, then resume it (`SIGCONT`) once
    /// a standby leads and writes (see the module docs).
    #[arg(long)]
    pause: bool,
    /// With `--worker`: campaign to write this data type (standbys mode).
    #[arg(long, hide = true)]
    lead: Option<String>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    match (args.worker, &args.lead) {
        (Some(id), Some(data_type)) => lead(&args, id, data_type).await,
        (Some(id), None) => work(&args, id).await,
        (None, _) if args.pause && args.standbys == 0 => {
            Err("--pause needs --standbys: a standby takes over from the paused leader".into())
        }
        (None, _) if args.standbys > 0 => standbys(&args).await,
        (None, _) => orchestrate(&args),
    }
}

/// The output directory: `--out`, or a fresh temp directory.
fn out_dir(args: &Args) -> std::io::Result<PathBuf> {
    let out = match &args.out {
        Some(out) => out.clone(),
        None => std::env::temp_dir().join(format!("chainlock-workers-{}", std::process::id())),
    };
    std::fs::create_dir_all(&out)?;
    Ok(out)
}

/// The command of worker `id`, writing into `out`.
fn worker_command(args: &Args, out: &Path, id: usize) -> std::io::Result<Command> {
    let mut command = Command::new(std::env::current_exe()?);
    command
        .args([
            "--worker",
            &id.to_string(),
            "--messages",
            &args.messages.to_string(),
        ])
        .args([
            "--types",
            &args.types.join(","),
            "--chunks",
            &args.chunks.to_string(),
        ])
        .arg("--out")
        .arg(out);
    match (args.backend, &args.url) {
        (Backend::Postgres, Some(url)) => {
            command.args(["--backend", "postgres", "--url", url]);
        }
        (Backend::Etcd, Some(url)) => {
            command.args(["--backend", "etcd", "--url", url]);
        }
        _ => {}
    }
    Ok(command)
}

/// Spawns the workers, waits for them and verifies every file.
fn orchestrate(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let out = out_dir(args)?;
    let mut children = Vec::new();
    for id in 0..args.workers {
        children.push(worker_command(args, &out, id)?.spawn()?);
    }
    for mut child in children {
        let status = child.wait()?;
        if !status.success() {
            return Err(format!("a worker failed: {status}").into());
        }
    }
    let mut total = 0;
    for data_type in &args.types {
        total += verify(&out.join(format!("{data_type}.data")), args.chunks, false)?.0;
    }
    let expected = args.workers * args.messages;
    if total != expected {
        return Err(format!("{total} records written, {expected} expected").into());
    }
    println!(
        "ok: {total} records in {} files, none interleaved, tokens increasing ({})",
        args.types.len(),
        out.display()
    );
    if args.out.is_none() {
        std::fs::remove_dir_all(&out)?;
    }
    Ok(())
}

/// The worker processes of the standbys mode: killed (and resumed first, if stopped) when
/// dropped, so that an orchestrator that fails leaves none behind.
struct Workers(Vec<std::process::Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            if matches!(child.try_wait(), Ok(None)) {
                signal(child.id(), "CONT").ok();
                child.kill().ok();
                child.wait().ok();
            }
        }
    }
}

/// Standbys mode: `standbys + 1` workers per data type campaign to write it; the first leader
/// of each type is killed once it wrote a third of the records (with `--pause`, the first
/// type's is paused and resumed); every file is verified.
async fn standbys(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    if args.pause && matches!(args.backend, Backend::File) {
        return Err("--pause needs etcd or PostgreSQL: a file lock is not lost while its process lives, so a paused leader keeps leading".into());
    }
    let out = out_dir(args)?;
    let client = connect(args, &out).await?;
    let paused_type = args.types.first().filter(|_| args.pause);
    let mut pids = std::collections::HashMap::new();
    let mut children = Workers(Vec::new());
    for (index, data_type) in args.types.iter().enumerate() {
        for standby in 0..=args.standbys {
            let id = index * (args.standbys + 1) + standby;
            let mut command = worker_command(args, &out, id)?;
            command.args(["--lead", data_type]);
            if paused_type == Some(data_type) {
                command.arg("--pause");
            }
            pids.insert(id, children.0.len());
            children.0.push(command.spawn()?);
        }
    }
    // Kill each type's first leader (`kill -9`) where it stopped, mid-record; with `--pause`,
    // pause the first type's where it waits, and resume it once a standby led and wrote.
    for data_type in &args.types {
        let marker = out.join(format!("{data_type}.stopped"));
        let id: usize = wait_for(&format!("{data_type}'s first leader to stop"), || {
            std::fs::read_to_string(&marker)
                .ok()
                .and_then(|text| text.trim().parse().ok())
        })
        .await?;
        // Observing the election names the stopped worker.
        let mut leaders = client.observe(&format!("{data_type}-writer")).await?;
        let deadline = tokio::time::Instant::now() + DEADLINE;
        let leader = loop {
            if let Some(leader) = leaders.current()
                && std::str::from_utf8(leader.value())?.parse::<usize>()? == id
            {
                break leader;
            }
            tokio::time::timeout_at(deadline, leaders.changed())
                .await
                .map_err(|_| format!("{data_type}: observing never named worker {id}"))??;
        };
        if paused_type == Some(data_type) {
            let child = &children.0[pids[&id]];
            pause(data_type, &out, child.id(), &leader, &mut leaders).await?;
            continue;
        }
        children.0[pids[&id]].kill()?;
        println!(
            "{data_type}: killed its leader, worker {id} (token {}), mid-record",
            leader.token()
        );
    }
    // Every worker ends (a stopped or stuck one fails the run at the deadline, and is killed
    // with the others as `children` drops).
    let mut failed = 0;
    for child in &mut children.0 {
        let pid = child.id();
        let status = wait_for(&format!("worker process {pid} to exit"), || {
            child.try_wait().ok().flatten()
        })
        .await?;
        if !status.success() {
            failed += 1;
        }
    }
    let killed = args.types.len() - usize::from(args.pause);
    if failed != killed {
        return Err(format!("{failed} workers failed, {killed} were killed").into());
    }
    if let Some(data_type) = paused_type {
        check_resumed(&out, data_type)?;
    }
    for data_type in &args.types {
        let (total, leaders) = verify(&out.join(format!("{data_type}.data")), args.chunks, true)?;
        if total != args.messages {
            return Err(format!("{data_type}: {total} records, {} expected", args.messages).into());
        }
        if leaders < 2 {
            return Err(format!("{data_type}: written by {leaders} leader: no failover").into());
        }
        println!(
            "{data_type}: {total} records by {leaders} leaders in turn, tokens never decreasing"
        );
    }
    let failover = if args.pause {
        "a pause of the first type's first leader and a kill -9 of the others"
    } else {
        "a kill -9 of each first leader"
    };
    println!(
        "ok: one writer per type at a time, through {failover} ({})",
        out.display()
    );
    if args.out.is_none() {
        std::fs::remove_dir_all(&out)?;
    }
    Ok(())
}

/// Checks what the resumed leader of `data_type` reported (`refused lost`): its record
/// refused by the storage, its leadership lost.
fn check_resumed(out: &Path, data_type: &str) -> Result<(), Box<dyn std::error::Error>> {
    let report = std::fs::read_to_string(out.join(format!("{data_type}.resumed")))?;
    let (refused, lost) = report
        .trim()
        .split_once(' ')
        .ok_or("a malformed report of the resumed leader")?;
    if (refused, lost) != ("1", "true") {
        return Err(format!(
            "{data_type}: the resumed leader's record refused: {refused}, its leadership lost: {lost} (1, true expected)"
        )
        .into());
    }
    println!(
        "{data_type}: resumed, the paused leader's record was refused by the storage (its token was stale), then it found its leadership lost and stopped"
    );
    Ok(())
}

/// Pauses the leader of `data_type` (process `pid`, `leader` as observed; `leaders` observes
/// the election) with `SIGSTOP`, which stops every thread of it (heartbeats, keep-alives);
/// once a standby leads (with a higher token) and wrote a record, writes `<type>.resume` (the
/// paused leader waits for it, so it cannot go on before it was stopped) and resumes it
/// (`SIGCONT`).
async fn pause(
    data_type: &str,
    out: &Path,
    pid: u32,
    leader: &Leader,
    leaders: &mut LeaderWatch,
) -> Result<(), Box<dyn std::error::Error>> {
    signal(pid, "STOP")?;
    let paused = std::time::Instant::now();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let standby = loop {
        if let Some(standby) = leaders.current()
            && standby.token() > leader.token()
        {
            break standby;
        }
        tokio::time::timeout_at(deadline, leaders.changed())
            .await
            .map_err(|_| format!("{data_type}: no standby led after the pause"))??;
    };
    let led_after = paused.elapsed();
    let path = out.join(format!("{data_type}.data"));
    wait_for(&format!("{data_type}'s standby to write"), || {
        let text = std::fs::read_to_string(&path).ok()?;
        let last: u64 = text.lines().last()?.split(' ').next()?.parse().ok()?;
        (last == standby.token().get()).then_some(())
    })
    .await?;
    std::fs::write(out.join(format!("{data_type}.resume")), "")?;
    signal(pid, "CONT")?;
    println!(
        "{data_type}: paused its leader, worker {} (token {}), between records; worker {} (token {}) led {led_after:.1?} later and wrote; resumed the paused one",
        String::from_utf8_lossy(leader.value()),
        leader.token(),
        String::from_utf8_lossy(standby.value()),
        standby.token()
    );
    Ok(())
}

/// Sends `SIG<name>` to process `pid` (with `kill`).
fn signal(pid: u32, name: &str) -> Result<(), Box<dyn std::error::Error>> {
    let sent = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()?;
    if !sent.success() {
        return Err(format!("kill -{name} {pid} failed").into());
    }
    Ok(())
}

/// The whole records in the file at `path`.
fn records(path: &Path, chunks: usize) -> usize {
    std::fs::read_to_string(path).map_or(0, |text| text.lines().count() / chunks)
}

/// A worker of the standbys mode: campaigns to write `data_type`; once it leads, drops a torn
/// record the previous leader may have left, appends records with its token until the file
/// holds `--messages`, and resigns.
async fn lead(args: &Args, id: usize, data_type: &str) -> Result<(), Box<dyn std::error::Error>> {
    let orchestrator = Orchestrator::new();
    let out = args.out.as_deref().ok_or("workers need --out")?;
    let client = connect(args, out).await?;
    let leadership = client
        .campaign(&format!("{data_type}-writer"), id.to_string())
        .await?;
    let path = out.join(format!("{data_type}.data"));
    // A leader killed mid-record left a torn one: the new leader drops it.
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let whole: Vec<&str> = text.lines().collect();
    let keep = whole.len() - whole.len() % args.chunks;
    if keep != whole.len() {
        let mut kept = whole[..keep].join("\n");
        if keep > 0 {
            kept.push('\n');
        }
        std::fs::write(&path, kept)?;
    }
    // The first leader (no marker yet) stops after a third: mid-record, to be killed; or,
    // with `--pause`, between its loss check and its next record, to be paused.
    let marker = out.join(format!("{data_type}.stopped"));
    let stop_at = (!marker.exists()).then_some(args.messages / 3);
    let mut seq = 0;
    while records(&path, args.chunks) < args.messages {
        if leadership.is_lost() {
            return Err("the leadership was lost: stopped writing".into());
        }
        let payload = format!("message {seq} of leader {id}");
        if Some(records(&path, args.chunks)) == stop_at {
            if args.pause {
                std::fs::write(marker.with_extension("tmp"), id.to_string())?;
                std::fs::rename(marker.with_extension("tmp"), &marker)?;
                // The orchestrator stops this process (`SIGSTOP`) and writes `resume` only
                // while it is stopped, then resumes it (`SIGCONT`): this waits for that.
                let resume = out.join(format!("{data_type}.resume"));
                while !resume.exists() {
                    orchestrator.check()?;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                // Resumed long past the loss bound, a standby leading: the record this step
                // started is refused by the storage's fence, and the loss check says stop.
                let refused = append(
                    &path,
                    leadership.token(),
                    id,
                    seq,
                    &payload,
                    args.chunks,
                    true,
                )?;
                let lost = leadership.is_lost();
                if let Err(refusal) = refused.accepted() {
                    println!(
                        "{data_type}: worker {id}, resumed: the storage refused its record ({refusal}); its leadership lost: {lost}"
                    );
                }
                let refused = usize::from(matches!(refused, Fence::Refused { .. }));
                std::fs::write(
                    out.join(format!("{data_type}.resumed")),
                    format!("{refused} {lost}"),
                )?;
                return Ok(());
            }
            tear(&path, leadership.token(), id, seq, args.chunks)?;
            std::fs::write(marker.with_extension("tmp"), id.to_string())?;
            std::fs::rename(marker.with_extension("tmp"), &marker)?;
            // Still the leader (its lease kept alive) until the orchestrator kills it.
            loop {
                orchestrator.check()?;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        append(
            &path,
            leadership.token(),
            id,
            seq,
            &payload,
            args.chunks,
            true,
        )?
        .accepted()?;
        seq += 1;
    }
    leadership.resign().await?;
    Ok(())
}

/// A client of the backend `args` names (the file backend's lock directory under `out`). In
/// the standbys mode, PostgreSQL heartbeats every 0.5 s answered within 1 s: a silent leader
/// is lost after 3 s and freed by the server after 4.5 s (as etcd's 2 s TTL here).
async fn connect(args: &Args, out: &Path) -> Result<LockClient, Box<dyn std::error::Error>> {
    Ok(match args.backend {
        Backend::File => LockClient::file(out.join("locks"))?,
        Backend::Postgres => {
            let url = args.url.as_deref().ok_or("--url is required")?;
            let mut options = PostgresOptions::new(url)?;
            if args.standbys > 0 || args.lead.is_some() {
                options = options
                    .heartbeat_interval(Duration::from_millis(500))
                    .heartbeat_timeout(Duration::from_secs(1));
            }
            LockClient::postgres_with(options).await?
        }
        Backend::Etcd => etcd(args.url.as_deref().ok_or("--url is required")?).await?,
    })
}

/// A client of the etcd cluster at `endpoints` (comma-separated), with a 2 s lease TTL (a
/// killed leader's standby leads within about that).
#[cfg(feature = "etcd")]
async fn etcd(endpoints: &str) -> Result<LockClient, Box<dyn std::error::Error>> {
    let options = chainlock::distributed::EtcdOptions::new(endpoints.split(','))
        .ttl(std::time::Duration::from_secs(2));
    Ok(LockClient::etcd_with(options).await?)
}

#[cfg(not(feature = "etcd"))]
#[expect(
    clippy::unused_async,
    reason = "the signature of the etcd build's twin"
)]
async fn etcd(_endpoints: &str) -> Result<LockClient, Box<dyn std::error::Error>> {
    Err("the etcd backend needs the feature: cargo run --features etcd --example workers".into())
}

/// One worker: takes its messages one by one, each under the lock of its data type.
async fn work(args: &Args, id: usize) -> Result<(), Box<dyn std::error::Error>> {
    let out = args.out.as_deref().ok_or("workers need --out")?;
    let locks = connect(args, out).await?;
    for seq in 0..args.messages {
        // A message: its data type and payload (a real worker would take it from a queue).
        let data_type = &args.types[(id * 7 + seq * 13) % args.types.len()];
        let payload = format!("message {seq} of worker {id}");
        let guard = locks.lock(data_type).await?;
        append(
            &out.join(format!("{data_type}.data")),
            guard.token(),
            id,
            seq,
            &payload,
            args.chunks,
            false,
        )?
        .accepted()?;
        guard.release().await?;
    }
    Ok(())
}

/// What the storage's fence did with a record.
#[derive(Clone, Copy)]
enum Fence {
    Accepted,
    /// Its token was stale: the file has seen `highest`.
    Refused {
        token: FencingToken,
        highest: u64,
    },
}

impl Fence {
    /// An error if the record was refused.
    fn accepted(self) -> Result<(), String> {
        match self {
            Self::Accepted => Ok(()),
            Self::Refused { token, highest } => {
                Err(format!("stale token {token}: the file has seen {highest}"))
            }
        }
    }
}

/// Appends one record in `chunks` writes, after checking the file's fence: a token above the
/// highest seen (a lock's: one record per hold), or at least it (`same_token_again`: a
/// leader's, many records per leadership); else writes nothing. The fence is checked and
/// raised atomically, the record written after (so two writers at once would interleave
/// their chunks, which the verifier sees).
fn append(
    path: &Path,
    token: FencingToken,
    id: usize,
    seq: usize,
    payload: &str,
    chunks: usize,
    same_token_again: bool,
) -> std::io::Result<Fence> {
    // The check and the new highest token, atomic under the storage's own lock of its fence
    // (as a database's row lock): a writer never reads a fence another is rewriting.
    let mut fence = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path.with_extension("fence"))?;
    fence.lock()?;
    let mut text = String::new();
    fence.read_to_string(&mut text)?;
    let highest: u64 = text.trim().parse().unwrap_or(0);
    if token.get() < highest || (token.get() == highest && !same_token_again) {
        return Ok(Fence::Refused { token, highest });
    }
    fence.set_len(0)?;
    fence.seek(SeekFrom::Start(0))?;
    fence.write_all(token.to_string().as_bytes())?;
    drop(fence);
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    for chunk in 0..chunks {
        file.write_all(format!("{token} {id} {seq} {chunk}/{chunks} {payload}\n").as_bytes())?;
    }
    Ok(Fence::Accepted)
}

/// Writes the first half of a record, as a writer killed mid-record leaves it (nothing if a
/// record is one chunk).
fn tear(
    path: &Path,
    token: FencingToken,
    id: usize,
    seq: usize,
    chunks: usize,
) -> std::io::Result<()> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    for chunk in 0..chunks / 2 {
        file.write_all(format!("{token} {id} {seq} {chunk}/{chunks} torn\n").as_bytes())?;
    }
    Ok(())
}

/// The process that started this worker: a worker waiting for it to act stops waiting once
/// it is gone (killed by a signal, it could not kill its workers: they must not wait forever).
struct Orchestrator(u32);

impl Orchestrator {
    fn new() -> Self {
        Orchestrator(std::os::unix::process::parent_id())
    }

    /// An error once the orchestrator is gone (this process was handed to another parent).
    fn check(&self) -> Result<(), Box<dyn std::error::Error>> {
        if std::os::unix::process::parent_id() == self.0 {
            Ok(())
        } else {
            Err("the orchestrator is gone: stopped waiting for it".into())
        }
    }
}

/// How long the orchestrator waits for a worker's step before it gives up.
const DEADLINE: std::time::Duration = std::time::Duration::from_mins(1);

/// Polls `probe` until it yields a value, for at most [`DEADLINE`].
async fn wait_for<T>(
    what: &str,
    mut probe: impl FnMut() -> Option<T>,
) -> Result<T, Box<dyn std::error::Error>> {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = probe() {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("timed out waiting for {what}").into());
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Checks that records are whole (all chunks of one record together, in order) and that tokens
/// increase (`same_token_again`: never decrease); returns the number of records and of
/// distinct tokens.
fn verify(
    path: &Path,
    chunks: usize,
    same_token_again: bool,
) -> Result<(usize, usize), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    if !lines.len().is_multiple_of(chunks) {
        return Err(format!("{}: a record is torn", path.display()).into());
    }
    let (mut last, mut tokens) = (0_u64, 0);
    for (index, record) in lines.chunks(chunks).enumerate() {
        let head: Vec<&str> = record[0].splitn(5, ' ').collect();
        let token: u64 = head[0].parse()?;
        for (chunk, line) in record.iter().enumerate() {
            let expected = format!("{} {} {} {chunk}/{chunks} ", head[0], head[1], head[2]);
            if !line.starts_with(&expected) {
                return Err(
                    format!("{} record {index}: interleaved: {line:?}", path.display()).into(),
                );
            }
        }
        if token < last || (token == last && !same_token_again) {
            return Err(format!(
                "{} record {index}: token {token} after {last}",
                path.display()
            )
            .into());
        }
        if token != last {
            tokens += 1;
        }
        last = token;
    }
    Ok((lines.len() / chunks, tokens))
}
