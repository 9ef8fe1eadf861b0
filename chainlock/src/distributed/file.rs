//! The file backend: one OS file lock per key in a lock directory, in either mode
//! (`flock(LOCK_EX)` for exclusive holds, `flock(LOCK_SH)` for shared ones), on one path.
//!
//! **Writer preference through a turnstile.** `flock` promises no order, so a steady stream of
//! overlapping readers could hold a name shared forever while a writer waits. Every waiting
//! acquisition, in either mode, therefore first passes the name's *turnstile*, a second lock
//! file (`<lock file>.turn`) locked exclusively: a writer holds it while it waits for the
//! readers inside to leave, so new readers queue at the turnstile behind it; a reader holds it
//! only until its own lock is granted. A writer thus waits at most for the holds present when
//! it took the turnstile, plus its turn at the turnstile, where each acquirer ahead of it
//! (served in order within a process; across processes in the kernel's order) stays only until
//! its own lock is granted. `try_lock` and `try_lock_shared` do not wait, so they do not pass
//! the turnstile: they ask the kernel directly, and a `try_lock_shared` granted the lock gives
//! it back if someone is in the turnstile (asked shared, a few times: a passing acquirer
//! leaves it at once), so that it never overtakes a waiting writer.
//!
//! Within a process, acquirers of one name queue on an in-process gate (a FIFO async mutex) in
//! front of the turnstile, so at most one thread per name and process ever sleeps in the
//! kernel; the gate's holder takes the turnstile and then the lock with `try_lock`, or hands the
//! gate to a helper thread that sleeps in a blocking `lock()`. A timed-out or cancelled
//! acquirer leaves the helper behind; the helper releases what the kernel grants it, then opens
//! the gate. The gates are per process (one map for every client, keyed by the canonical path
//! of the turnstile), which bounds helper threads to one per waited-for name and process, and
//! never busy-polls.
//!
//! Lock files are opened without following links (`O_NOFOLLOW`, and `O_EXCL` when created),
//! and used only if they are regular files with one link that not everyone may write; new ones
//! get mode `0660` whatever the umask (see [`LockClient::file`](super::LockClient::file)).
//!
//! `File::lock` is `flock(2)` on Unix: it belongs to the open file description, and every
//! acquisition opens the file anew, so two threads (or two clients) of one process exclude each
//! other in the kernel too, not only through the gate.
//!
//! Fencing: an exclusive holder increments the counter stored in the lock file (with
//! `fdatasync`); a shared holder cannot write it (other readers read it at the same time), so
//! its token is the counter as the last exclusive holder left it (0 if there was none).

mod election;

use super::backend::{Backend, BoxFuture, Hold, Leading, Mode, Wait};
use super::election::Leader;
use super::{Error, FencingToken, name};
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

/// A held file lock.
pub(super) struct FileHeld {
    file: File,
    path: PathBuf,
    token: FencingToken,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `try_lock` in `mode`: `Ok(true)` if granted, `Ok(false)` if held in a conflicting mode.
fn try_lock_in(file: &File, mode: Mode, path: &Path) -> Result<bool, Error> {
    let tried = match mode {
        Mode::Exclusive => file.try_lock(),
        Mode::Shared => file.try_lock_shared(),
    };
    match tried {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(source)) => Err(io_error(path)(source)),
    }
}

/// Opens the lock file at `path` and tries to lock it in `mode`.
async fn open_and_try(path: &Path, mode: Mode) -> Result<(File, bool), Error> {
    let opened = path.to_path_buf();
    off_executor(move || {
        let file = open_lock_file(&opened)?;
        let free = try_lock_in(&file, mode, &opened)?;
        Ok((file, free))
    })
    .await
}

/// Opens the lock file at `path` and tries to lock it shared, unless an acquisition is in the
/// turnstile at `turn_path` (a waiting writer, above all): then it reports it not free. A reader passing the turnstile stays there only until its own lock
/// is granted, so the turnstile is asked a few times before it counts as taken.
async fn open_and_try_shared(path: &Path, turn_path: &Path) -> Result<(File, bool), Error> {
    /// How often a taken turnstile is asked again (a passing acquirer leaves it at once).
    const TURNSTILE_ASKS: usize = 3;
    let (opened, turn_opened) = (path.to_path_buf(), turn_path.to_path_buf());
    off_executor(move || {
        let file = open_lock_file(&opened)?;
        if !try_lock_in(&file, Mode::Shared, &opened)? {
            return Ok((file, false));
        }
        // Granted: unless someone is in the turnstile. Asked shared, so that readers asking
        // at once do not turn each other away; released at once.
        let turn = open_lock_file(&turn_opened)?;
        for ask in 1..=TURNSTILE_ASKS {
            if try_lock_in(&turn, Mode::Shared, &turn_opened)? {
                return Ok((file, true));
            }
            if ask < TURNSTILE_ASKS {
                std::thread::yield_now();
            }
        }
        // An acquisition waits in the turnstile: not free (dropping `file` gives it back).
        Ok((file, false))
    })
    .await
}

/// Locks `path` in `mode`, waiting in the kernel on a helper thread (which keeps `keep`
/// meanwhile) if it is held; `None` once `deadline` passed (the helper then releases what it
/// is granted, and drops `keep`). Returns the locked file and `keep` back.
async fn lock_waiting<K: Send + 'static>(
    path: &Path,
    mode: Mode,
    keep: K,
    deadline: Option<Instant>,
) -> Result<Option<(File, K)>, Error> {
    let (file, free) = open_and_try(path, mode).await?;
    if free {
        return Ok(Some((file, keep)));
    }
    let granted = wait_in_kernel(file, mode, keep, path)?;
    await_grant(granted, deadline, path).await
}

/// The lock a helper thread waits for, once granted (with what it kept); `None` once
/// `deadline` passed (the helper then releases what it is granted, and drops what it kept).
async fn await_grant<K>(
    granted: Granted<K>,
    deadline: Option<Instant>,
    path: &Path,
) -> Result<Option<(File, K)>, Error> {
    let outcome = match deadline {
        Some(deadline) => match timeout_at(deadline, granted).await {
            Ok(outcome) => outcome,
            Err(_) => return Ok(None),
        },
        None => granted.await,
    };
    match outcome {
        Ok((Ok(file), keep)) => Ok(Some((file, keep))),
        Ok((Err(source), _)) => Err(io_error(path)(source)),
        Err(_) => Err(Error::Helper("the lock helper thread died".into())),
    }
}

impl FileBackend {
    pub(super) fn new(dir: &Path) -> Result<Self, Error> {
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        let dir = std::fs::canonicalize(dir).map_err(io_error(dir))?;
        Ok(Self { dir })
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

    async fn acquire_in(
        &self,
        key: name::LockKey<'_>,
        mode: Mode,
        wait: Wait,
    ) -> Result<Option<FileHeld>, Error> {
        self.acquire_path(self.dir.join(name::key_file_name(key)), mode, wait)
            .await
    }

    /// Locks the lock file at `path` in `mode`, as `wait` allows.
    async fn acquire_path(
        &self,
        path: PathBuf,
        mode: Mode,
        wait: Wait,
    ) -> Result<Option<FileHeld>, Error> {
        let wait = wait.now();
        let deadline = wait.deadline().map(Instant::from_std);
        let mut turn_path = path.clone().into_os_string();
        turn_path.push(".turn");
        let turn_path = PathBuf::from(turn_path);
        loop {
            let file = if matches!(wait, Wait::Never) {
                // No wait: ask the kernel (a shared ask yields to the turnstile).
                let (file, free) = match mode {
                    Mode::Exclusive => open_and_try(&path, mode).await?,
                    Mode::Shared => open_and_try_shared(&path, &turn_path).await?,
                };
                if !free {
                    return Ok(None);
                }
                file
            } else {
                let gate = Self::gate(&turn_path);
                let gate_guard: GateGuard = match deadline {
                    Some(deadline) => match timeout_at(deadline, gate.lock_owned()).await {
                        Ok(guard) => guard,
                        Err(_) => return Ok(None),
                    },
                    None => gate.lock_owned().await,
                };
                // The turnstile (exclusive), then the lock; the turnstile and the gate open
                // once the lock is granted (they drop at the end of this block). Fast path,
                // one blocking task: both free now.
                let (turn, main) = {
                    let (turn_path, path) = (turn_path.clone(), path.clone());
                    off_executor(move || {
                        let turn = open_lock_file(&turn_path)?;
                        if !try_lock_in(&turn, Mode::Exclusive, &turn_path)? {
                            return Ok((turn, None));
                        }
                        let main = open_lock_file(&path)?;
                        let free = try_lock_in(&main, mode, &path)?;
                        Ok((turn, Some((main, free))))
                    })
                    .await?
                };
                match main {
                    Some((main, true)) => main,
                    Some((main, false)) => {
                        // Through the turnstile; wait for the lock, keeping it meanwhile.
                        let granted = wait_in_kernel(main, mode, (turn, gate_guard), &path)?;
                        let Some((file, _kept)) = await_grant(granted, deadline, &path).await?
                        else {
                            return Ok(None);
                        };
                        file
                    }
                    None => {
                        // Someone is in the turnstile (a waiting writer, or a passing acquirer).
                        let granted =
                            wait_in_kernel(turn, Mode::Exclusive, gate_guard, &turn_path)?;
                        let Some((turnstile, gate_guard)) =
                            await_grant(granted, deadline, &turn_path).await?
                        else {
                            return Ok(None);
                        };
                        let Some((file, _kept)) =
                            lock_waiting(&path, mode, (turnstile, gate_guard), deadline).await?
                        else {
                            return Ok(None);
                        };
                        file
                    }
                }
            };
            // The token's `fdatasync` takes milliseconds: never on the async executor.
            let locked = path.clone();
            let (file, token) = off_executor(move || {
                if !still_linked(&file, &locked)? {
                    return Ok((file, None));
                }
                let token = match mode {
                    Mode::Exclusive => next_token(&file, &locked)?,
                    Mode::Shared => current_token(&file, &locked)?,
                };
                Ok((file, Some(token)))
            })
            .await?;
            let Some(token) = token else {
                // The file was deleted or replaced while we waited: our lock guards nothing
                // anyone else will find. Lock the file that is there now.
                drop(file);
                continue;
            };
            return Ok(Some(FileHeld { file, path, token }));
        }
    }
}

impl Backend for FileBackend {
    fn name(&self) -> &'static str {
        "file"
    }

    fn acquire<'a>(
        &'a self,
        key: name::LockKey<'a>,
        mode: Mode,
        wait: Wait,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Hold>>, Error>> {
        Box::pin(async move {
            Ok(self
                .acquire_in(key, mode, wait)
                .await?
                .map(|held| Box::new(held) as Box<dyn Hold>))
        })
    }

    fn describe(&self, f: &mut std::fmt::DebugStruct<'_, '_>) {
        f.field("dir", &self.dir);
    }

    fn campaign<'a>(
        &'a self,
        name: &'a str,
        value: &'a [u8],
        wait: Wait,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Leading>>, Error>> {
        Box::pin(async move {
            Ok(self
                .campaign_in(name, value, wait)
                .await?
                .map(|held| Box::new(held) as Box<dyn Leading>))
        })
    }

    fn leader<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Leader>, Error>> {
        Box::pin(self.leader_in(name))
    }
}

impl Hold for FileHeld {
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

    fn release(self: Box<Self>) -> BoxFuture<'static, Result<(), Error>> {
        let released = self.file.unlock().map_err(io_error(&self.path));
        Box::pin(std::future::ready(released))
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

type Granted<K> = oneshot::Receiver<(std::io::Result<File>, K)>;

/// Sleeps in a blocking `lock()` (in `mode`) on a helper thread that owns `keep` (the gate,
/// the turnstile) meanwhile.
fn wait_in_kernel<K: Send + 'static>(
    file: File,
    mode: Mode,
    keep: K,
    path: &Path,
) -> Result<Granted<K>, Error> {
    let (send, receive) = oneshot::channel();
    std::thread::Builder::new()
        .name("chainlock-flock".into())
        .spawn(move || {
            let outcome = match mode {
                Mode::Exclusive => file.lock(),
                Mode::Shared => file.lock_shared(),
            }
            .map(|()| file);
            // If the acquirer gave up, dropping the returned value releases the lock first
            // (tuple fields drop in order), then what it kept.
            drop(send.send((outcome, keep)));
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

/// The counter stored in the (share-locked) file, unchanged.
fn current_token(mut file: &File, path: &Path) -> Result<FencingToken, Error> {
    let mut bytes = Vec::with_capacity(8);
    file.seek(SeekFrom::Start(0)).map_err(io_error(path))?;
    file.take(9)
        .read_to_end(&mut bytes)
        .map_err(io_error(path))?;
    match bytes.len() {
        0 => Ok(FencingToken::new(0)),
        8 => Ok(FencingToken::new(u64::from_le_bytes(
            bytes.try_into().expect("8 bytes"),
        ))),
        _ => Err(Error::CorruptLockFile {
            path: path.to_path_buf(),
            len: file.metadata().map_err(io_error(path))?.len(),
        }),
    }
}
