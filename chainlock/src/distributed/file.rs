//! The file backend: one OS file lock per name in a lock directory.
//!
//! Within a process, acquirers of one name first queue on an in-process gate (an async mutex),
//! so at most one thread per name and process ever sleeps in the kernel; the gate's holder
//! takes the file lock with `try_lock`, or else hands the gate to a helper thread that sleeps
//! in a blocking `lock()`. A timed-out or cancelled acquirer leaves the helper behind; the
//! helper releases the lock as soon as the kernel grants it, then opens the gate. The gates are
//! per process (one map for every client, keyed by the canonical path of the lock file), which
//! bounds helper threads to one per waited-for name and process, and never busy-polls. A
//! `try_acquire` that finds the gate taken asks the kernel directly (`try_lock` on a file
//! description of its own), so a helper left behind by a cancelled waiter never makes a free
//! name look held.
//!
//! Lock files are opened without following links (`O_NOFOLLOW`, and `O_EXCL` when created),
//! and used only if they are regular files with one link that not everyone may write; new ones
//! get mode `0660` whatever the umask (see [`LockClient::file`](super::LockClient::file)).
//!
//! `File::lock` is `flock(2)` on Unix: it belongs to the open file description, and every
//! acquisition opens the file anew, so two threads (or two clients) of one process exclude each
//! other in the kernel too, not only through the gate.

mod shared;

use super::{Error, FencingToken, Wait, name};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Weak};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard, oneshot};
use tokio::time::{Instant, timeout_at};

type Gate = AsyncMutex<()>;
type GateGuard = OwnedMutexGuard<()>;

pub(super) struct FileBackend {
    /// Canonical, so that every client of one directory finds the same gates.
    dir: PathBuf,
}

/// The gates of every client of this process.
static GATES: LazyLock<Mutex<Gates>> = LazyLock::new(Mutex::default);

#[derive(Default)]
struct Gates {
    by_path: HashMap<PathBuf, Weak<Gate>>,
    /// Size after the last sweep of dead entries; the next sweep runs at twice this size.
    swept_at: usize,
}

/// A held file lock. Field order matters: the file (the lock) is closed before the gate opens.
pub(super) struct FileHeld {
    file: File,
    path: PathBuf,
    /// `None` for a `try_acquire` that went past a gate taken by a waiter.
    _gate: Option<GateGuard>,
    pub(super) token: FencingToken,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl FileBackend {
    pub(super) fn new(dir: &Path) -> Result<Self, Error> {
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        let dir = std::fs::canonicalize(dir).map_err(io_error(dir))?;
        Ok(Self { dir })
    }

    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    fn gate(path: &Path) -> Arc<Gate> {
        let mut gates = GATES.lock();
        if let Some(gate) = gates.by_path.get(path).and_then(Weak::upgrade) {
            return gate;
        }
        if gates.by_path.len() >= 2 * gates.swept_at.max(32) {
            gates.by_path.retain(|_, gate| gate.strong_count() > 0);
            gates.swept_at = gates.by_path.len();
        }
        let gate = Arc::new(Gate::new(()));
        gates
            .by_path
            .insert(path.to_path_buf(), Arc::downgrade(&gate));
        gate
    }

    pub(super) async fn acquire(
        &self,
        key: name::LockKey<'_>,
        wait: Wait,
    ) -> Result<Option<FileHeld>, Error> {
        let path = self.dir.join(name::key_file_name(key));
        let deadline = match wait {
            // A timeout too large for an `Instant` (say `Duration::MAX`) waits forever.
            Wait::For(timeout) => Instant::now().checked_add(timeout),
            Wait::Never | Wait::Forever => None,
        };
        let gate = Self::gate(&path);
        let mut gate_guard = match (wait, deadline) {
            // A gate taken by a waiter (maybe one that gave up) says nothing about the kernel
            // lock: ask the kernel, without the gate.
            (Wait::Never, _) => gate.try_lock_owned().ok(),
            (_, Some(deadline)) => match timeout_at(deadline, gate.lock_owned()).await {
                Ok(guard) => Some(guard),
                Err(_) => return Ok(None),
            },
            (_, None) => Some(gate.lock_owned().await),
        };
        loop {
            let opened = path.clone();
            let (file, free) = off_executor(move || {
                let file = open_lock_file(&opened)?;
                match file.try_lock() {
                    Ok(()) => Ok((file, true)),
                    Err(TryLockError::WouldBlock) => Ok((file, false)),
                    Err(TryLockError::Error(source)) => Err(Error::Io {
                        path: opened,
                        source,
                    }),
                }
            })
            .await?;
            let (file, guard) = if free {
                (file, gate_guard)
            } else {
                let Some(gate_guard) = gate_guard.filter(|_| !matches!(wait, Wait::Never)) else {
                    return Ok(None);
                };
                let granted = wait_in_kernel(file, gate_guard, &path)?;
                let outcome = match deadline {
                    Some(deadline) => match timeout_at(deadline, granted).await {
                        Ok(outcome) => outcome,
                        // The helper thread releases the lock when it comes.
                        Err(_) => return Ok(None),
                    },
                    None => granted.await,
                };
                match outcome {
                    Ok((Ok(file), guard)) => (file, Some(guard)),
                    Ok((Err(source), _)) => return Err(Error::Io { path, source }),
                    Err(_) => return Err(Error::Helper("the lock helper thread died".into())),
                }
            };
            // The token's `fdatasync` takes milliseconds: never on the async executor.
            let locked = path.clone();
            let (file, token) = off_executor(move || {
                if !still_linked(&file, &locked)? {
                    return Ok((file, None));
                }
                let token = next_token(&file, &locked)?;
                Ok((file, Some(token)))
            })
            .await?;
            let Some(token) = token else {
                // The file was deleted or replaced while we waited: our lock guards nothing
                // anyone else will find. Lock the file that is there now.
                drop(file);
                gate_guard = guard;
                continue;
            };
            return Ok(Some(FileHeld {
                file,
                path,
                _gate: guard,
                token,
            }));
        }
    }
}

/// The mode of new lock files: the owner and the group may lock, others not (whatever the
/// umask): several users share a lock directory through a common group.
#[cfg(unix)]
const LOCK_FILE_MODE: u32 = 0o660;

/// Opens (creating if missing) the lock file at `path`, refusing anything but a regular lock
/// file: never follows a symbolic link, never opens a FIFO or device, never a file with a
/// second hard link (it would be someone else's file too), never a world-writable one (we
/// never create one: it was planted or tampered with).
#[cfg(unix)]
fn open_lock_file(path: &Path) -> Result<File, Error> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let unsafe_file = |reason: &str| Error::UnsafeLockFile {
        path: path.to_path_buf(),
        reason: reason.into(),
    };
    let flags = libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK;
    loop {
        // `O_CREAT | O_EXCL` never follows a link, not even a dangling one.
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(LOCK_FILE_MODE)
            .custom_flags(flags)
            .open(path)
        {
            Ok(file) => {
                // `fchmod`: the umask does not apply.
                file.set_permissions(std::fs::Permissions::from_mode(LOCK_FILE_MODE))
                    .map_err(io_error(path))?;
                return Ok(file);
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(io_error(path)(source)),
        }
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(flags)
            .open(path)
        {
            Ok(file) => file,
            // Removed since: create it.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
                return Err(unsafe_file("a symbolic link"));
            }
            Err(err) if err.raw_os_error() == Some(libc::EISDIR) => {
                return Err(unsafe_file("a directory"));
            }
            Err(source) => return Err(io_error(path)(source)),
        };
        let metadata = file.metadata().map_err(io_error(path))?;
        if !metadata.file_type().is_file() {
            return Err(unsafe_file("not a regular file"));
        }
        if metadata.nlink() != 1 {
            return Err(unsafe_file("a file with another hard link"));
        }
        if metadata.mode() & 0o002 != 0 {
            return Err(unsafe_file("writable by every user"));
        }
        return Ok(file);
    }
}

#[cfg(not(unix))]
fn open_lock_file(path: &Path) -> Result<File, Error> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io_error(path))
}

/// Runs blocking file work (open, `fdatasync`) on tokio's blocking pool. If the acquiring
/// future is dropped meanwhile, the work finishes and its file closes, which releases any
/// lock it took.
async fn off_executor<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| Error::Helper("a blocking file operation panicked".into()))?
}

type Granted = oneshot::Receiver<(std::io::Result<File>, GateGuard)>;

/// Sleeps in a blocking `lock()` on a helper thread that owns the gate meanwhile.
fn wait_in_kernel(file: File, gate: GateGuard, path: &Path) -> Result<Granted, Error> {
    let (send, receive) = oneshot::channel();
    std::thread::Builder::new()
        .name("chainlock-flock".into())
        .spawn(move || {
            let outcome = file.lock().map(|()| file);
            // If the acquirer gave up, dropping the returned value releases the lock first
            // (tuple fields drop in order), then opens the gate.
            drop(send.send((outcome, gate)));
        })
        .map_err(io_error(path))?;
    Ok(receive)
}

/// Whether `path` still names the file we locked (it was not deleted or replaced).
#[cfg(unix)]
fn still_linked(file: &File, path: &Path) -> Result<bool, Error> {
    use std::os::unix::fs::MetadataExt;
    let locked = file.metadata().map_err(io_error(path))?;
    match std::fs::symlink_metadata(path) {
        Ok(now) => Ok(now.dev() == locked.dev() && now.ino() == locked.ino()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(Error::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Open files cannot be deleted or replaced on Windows.
#[cfg(not(unix))]
fn still_linked(_: &File, _: &Path) -> Result<bool, Error> {
    Ok(true)
}

/// Reads the counter stored in the (locked) file, stores the next value durably, returns it.
fn next_token(mut file: &File, path: &Path) -> Result<FencingToken, Error> {
    let mut bytes = Vec::with_capacity(8);
    file.seek(SeekFrom::Start(0)).map_err(io_error(path))?;
    file.take(9)
        .read_to_end(&mut bytes)
        .map_err(io_error(path))?;
    let previous = match bytes.len() {
        0 => 0,
        8 => u64::from_le_bytes(bytes.try_into().expect("8 bytes")),
        _ => {
            return Err(Error::CorruptLockFile {
                path: path.to_path_buf(),
                len: file.metadata().map_err(io_error(path))?.len(),
            });
        }
    };
    let next = previous.checked_add(1).ok_or(Error::TokensExhausted)?;
    file.seek(SeekFrom::Start(0)).map_err(io_error(path))?;
    file.write_all(&next.to_le_bytes())
        .map_err(io_error(path))?;
    file.sync_data().map_err(io_error(path))?;
    Ok(FencingToken::new(next))
}

impl FileHeld {
    pub(super) fn release(self) -> Result<(), Error> {
        self.file.unlock().map_err(io_error(&self.path))
    }
}
