//! The file backend's leader election: three files per election name, beside the lock files
//! but never the same (`e-` where a lock's are `n-`):
//!
//! - `e-<name>.lock`, the election's lock file: candidates queue on it as on an exclusive lock
//!   (the turnstile, the gates, the kernel's order), and its counter is the leaders' fencing
//!   token;
//! - `e-<name>.alive`, locked exclusively by the leader for as long as it leads: the kernel
//!   releases it when the leader's process dies, however it dies;
//! - `e-<name>.leader`, the leader's record (its token, 8 bytes little-endian, then its value),
//!   replaced whole by a rename, never written in place.
//!
//! The leader now is the record only if `.alive` is locked and the record's token is the lock
//! file's counter (a new leader counts before it writes its record): a dead leader's record,
//! or one a new leader has not replaced yet, is never reported. An observer asks `.alive`
//! with a shared `try_lock`, given back at once: a leader taking `.alive` waits for it for
//! that instant, a candidate never does (candidates queue on `.lock`).
//!
//! A file lock is not lost while its process lives: a paused leader keeps leading, and
//! failover happens on process death only.

use super::{FileBackend, FileHeld, current_token, io_error, off_executor, open_lock_file};
use crate::distributed::backend::{BoxFuture, Hold, Leading, Mode, Wait};
use crate::distributed::election::Leader;
use crate::distributed::{Error, FencingToken, name};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The three files of an election name.
#[derive(Clone)]
struct Paths {
    lock: PathBuf,
    alive: PathBuf,
    record: PathBuf,
}

impl Paths {
    fn new(dir: &Path, name: &str) -> Self {
        let lock = name::file_name(name);
        let stem = lock
            .strip_prefix("n-")
            .and_then(|rest| rest.strip_suffix(".lock"))
            .expect("a name's lock file is n-<encoding>.lock");
        Self {
            lock: dir.join(format!("e-{stem}.lock")),
            alive: dir.join(format!("e-{stem}.alive")),
            record: dir.join(format!("e-{stem}.leader")),
        }
    }
}

/// A leading candidacy: the election's lock, `.alive`, and the record it wrote.
pub(in crate::distributed) struct FileLeading {
    paths: Paths,
    token: FencingToken,
    /// Both `None` once resigned (by [`Hold::release`] or the drop).
    alive: Option<File>,
    held: Option<FileHeld>,
}

impl FileLeading {
    /// Removes the record, then gives `.alive` and the election's lock back (in that order, so
    /// that no one reads this leader's record once the next one may lead).
    fn resign_now(&mut self) -> Result<(), Error> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        let removed = match std::fs::remove_file(&self.paths.record) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error(&self.paths.record)(error))
            }
            _ => Ok(()),
        };
        drop(self.alive.take());
        let released = held.file.unlock().map_err(io_error(&held.path));
        removed.and(released)
    }
}

impl Drop for FileLeading {
    fn drop(&mut self) {
        self.resign_now().ok();
    }
}

impl Hold for FileLeading {
    fn token(&self) -> FencingToken {
        self.token
    }

    /// File locks are lost only with the process.
    fn is_lost(&self) -> bool {
        false
    }

    fn lost(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::pending())
    }

    fn release(mut self: Box<Self>) -> BoxFuture<'static, Result<(), Error>> {
        Box::pin(std::future::ready(self.resign_now()))
    }
}

impl Leading for FileLeading {
    fn proclaim<'a>(&'a self, value: &'a [u8]) -> BoxFuture<'a, Result<(), Error>> {
        let (record, token, value) = (self.paths.record.clone(), self.token, value.to_vec());
        Box::pin(off_executor(move || write_record(&record, token, &value)))
    }
}

impl FileBackend {
    /// Campaigns as an exclusive acquisition of the election's lock file; once it is held,
    /// takes `.alive` and writes the record.
    pub(super) async fn campaign_in(
        &self,
        name: &str,
        value: &[u8],
        wait: Wait,
    ) -> Result<Option<FileLeading>, Error> {
        let paths = Paths::new(&self.dir, name);
        let Some(held) = self
            .acquire_path(paths.lock.clone(), Mode::Exclusive, wait)
            .await?
        else {
            return Ok(None);
        };
        let value = value.to_vec();
        // Off the executor: `.alive` may be probed by an observer for an instant. Cancelled
        // meanwhile, the task finishes and its drop resigns.
        off_executor(move || {
            let mut leading = FileLeading {
                token: held.token,
                alive: None,
                held: Some(held),
                paths,
            };
            let alive = open_lock_file(&leading.paths.alive)?;
            alive.lock().map_err(io_error(&leading.paths.alive))?;
            leading.alive = Some(alive);
            write_record(&leading.paths.record, leading.token, &value)?;
            Ok(Some(leading))
        })
        .await
    }

    /// The leader now: the record, if `.alive` is held and the record's token is the
    /// election's counter.
    pub(super) async fn leader_in(&self, name: &str) -> Result<Option<Leader>, Error> {
        let paths = Paths::new(&self.dir, name);
        off_executor(move || {
            let alive = open_lock_file(&paths.alive)?;
            match alive.try_lock_shared() {
                Ok(()) => return Ok(None),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(error)) => return Err(io_error(&paths.alive)(error)),
            }
            let counter = current_token(&open_lock_file(&paths.lock)?, &paths.lock)?;
            Ok(read_record(&paths.record)?.filter(|leader| leader.token == counter))
        })
        .await
    }
}

/// Writes the record of the leader with `token` and `value` at `record`: a new file, renamed
/// over the old one, so that a reader sees one record whole or the other.
fn write_record(record: &Path, token: FencingToken, value: &[u8]) -> Result<(), Error> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut temporary = record.as_os_str().to_owned();
    temporary.push(format!(
        ".{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let temporary = PathBuf::from(temporary);
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o660)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let written = options.open(&temporary).and_then(|mut file| {
        let mut bytes = Vec::with_capacity(8 + value.len());
        bytes.extend_from_slice(&token.get().to_le_bytes());
        bytes.extend_from_slice(value);
        file.write_all(&bytes)
    });
    written
        .and_then(|()| std::fs::rename(&temporary, record))
        .map_err(|error| {
            std::fs::remove_file(&temporary).ok();
            io_error(record)(error)
        })
}

/// The record at `record` (`None`: none, or not a record: too short, not a regular file).
fn read_record(record: &Path) -> Result<Option<Leader>, Error> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK);
    }
    let mut file = match options.open(record) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error(record)(error)),
    };
    if !file.metadata().map_err(io_error(record))?.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io_error(record))?;
    if bytes.len() < 8 {
        return Ok(None);
    }
    let value = bytes.split_off(8);
    let token = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    Ok(Some(Leader {
        value,
        token: FencingToken::new(token),
    }))
}
