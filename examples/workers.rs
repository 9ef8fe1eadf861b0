//! Worker processes append records to one file per data type, each type under its own named
//! lock, with the lock's fencing token; a verifier then checks that no file has interleaved
//! records or tokens out of order.
//!
//! ```text
//! cargo run --example workers                                  # file backend, no set-up
//! cargo run --example workers -- --backend postgres --url postgres://user@host/db
//! cargo run --features etcd --example workers -- --backend etcd --url http://10.0.0.1:2379,http://10.0.0.2:2379
//! cargo run --example workers -- --workers 8 --messages 500 --types orders,users,events
//! ```
//!
//! Each record is written in several chunks (one `write` each), so two workers writing the
//! same type at once would interleave their chunks. The storage also enforces the fence: a
//! writer whose token is not above the highest token the file has seen is refused, which is
//! what protects data from a holder that lost its lock while paused.

use chainlock::distributed::{FencingToken, LockClient};
use clap::{Parser, ValueEnum};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    /// Run as worker number N (used by the orchestrator).
    #[arg(long, hide = true)]
    worker: Option<usize>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    match args.worker {
        Some(id) => work(&args, id).await,
        None => orchestrate(&args),
    }
}

/// Spawns the workers, waits for them and verifies every file.
fn orchestrate(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let out = match &args.out {
        Some(out) => out.clone(),
        None => std::env::temp_dir().join(format!("chainlock-workers-{}", std::process::id())),
    };
    std::fs::create_dir_all(&out)?;
    let mut children = Vec::new();
    for id in 0..args.workers {
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
            .arg(&out);
        match (args.backend, &args.url) {
            (Backend::Postgres, Some(url)) => {
                command.args(["--backend", "postgres", "--url", url]);
            }
            (Backend::Etcd, Some(url)) => {
                command.args(["--backend", "etcd", "--url", url]);
            }
            _ => {}
        }
        children.push(command.spawn()?);
    }
    for mut child in children {
        let status = child.wait()?;
        if !status.success() {
            return Err(format!("a worker failed: {status}").into());
        }
    }
    let mut total = 0;
    for data_type in &args.types {
        total += verify(&out.join(format!("{data_type}.data")), args.chunks)?;
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

/// A client of the etcd cluster at `endpoints` (comma-separated).
#[cfg(feature = "etcd")]
async fn etcd(endpoints: &str) -> Result<LockClient, Box<dyn std::error::Error>> {
    Ok(LockClient::etcd(endpoints.split(',')).await?)
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
    let locks = match args.backend {
        Backend::File => LockClient::file(out.join("locks"))?,
        Backend::Postgres => {
            LockClient::postgres(args.url.as_deref().ok_or("--url is required")?).await?
        }
        Backend::Etcd => etcd(args.url.as_deref().ok_or("--url is required")?).await?,
    };
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
        )?;
        guard.release().await?;
    }
    Ok(())
}

/// Appends one record in `chunks` writes, after checking the file's fence.
fn append(
    path: &Path,
    token: FencingToken,
    id: usize,
    seq: usize,
    payload: &str,
    chunks: usize,
) -> std::io::Result<()> {
    let fence = path.with_extension("fence");
    let highest: u64 = std::fs::read_to_string(&fence)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0);
    if token.get() <= highest {
        return Err(std::io::Error::other(format!(
            "stale token {token}: the file has seen {highest}"
        )));
    }
    std::fs::write(&fence, token.to_string())?;
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    for chunk in 0..chunks {
        file.write_all(format!("{token} {id} {seq} {chunk}/{chunks} {payload}\n").as_bytes())?;
    }
    Ok(())
}

/// Checks that records are whole (all chunks of one record together, in order) and that tokens
/// increase; returns the number of records.
fn verify(path: &Path, chunks: usize) -> Result<usize, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    if !lines.len().is_multiple_of(chunks) {
        return Err(format!("{}: a record is torn", path.display()).into());
    }
    let mut last = 0_u64;
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
        if token <= last {
            return Err(format!(
                "{} record {index}: token {token} after {last}",
                path.display()
            )
            .into());
        }
        last = token;
    }
    Ok(lines.len() / chunks)
}
