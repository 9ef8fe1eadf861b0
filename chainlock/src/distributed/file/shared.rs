//! The shared mode of the file backend's reader-writer lock: `flock(LOCK_SH)` on the name's
//! lock file (the one the exclusive mode, the mutex, locks with `LOCK_EX`).
//!
//! A shared acquirer first asks the kernel directly (`try_lock_shared` on a file description
//! of its own), without any in-process gate, so that any number of threads of one process hold
//! the name shared at once. Only when the kernel says "held exclusively" does it take the
//! name's in-process gate (the mutex's) while it *waits*: at most one thread per name and
//! process sleeps in the kernel, as for the mutex. Unlike an exclusive holder, a shared holder
//! opens the gate as soon as the kernel granted its lock, so the next waiter of the process
//! may join it. A timed-out or cancelled waiter leaves its helper thread behind, which releases
//! the lock as soon as the kernel grants it, then opens the gate.
//!
//! Fencing: a shared holder cannot write the counter (other shared holders read it at the same
//! time), so its token is the counter as the last exclusive holder left it: equal to the token
//! of the latest exclusive acquisition before it (0 if there was none), and less than the token
//! of every later exclusive acquisition.

use super::{
    Error, FencingToken, FileBackend, FileHeld, GateGuard, Wait, io_error, name, off_executor,
    open_lock_file, still_linked,
};
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use tokio::sync::oneshot;
use tokio::time::{Instant, timeout_at};

impl FileBackend {
    /// Acquires `name` in shared mode.
    pub(in super::super) async fn acquire_shared(
        &self,
        name: &str,
        wait: Wait,
    ) -> Result<Option<FileHeld>, Error> {
        let path = self.dir.join(name::file_name(name));
        let deadline = match wait {
            Wait::For(timeout) => Instant::now().checked_add(timeout),
            Wait::Never | Wait::Forever => None,
        };
        loop {
            let opened = path.clone();
            let (file, free) = off_executor(move || {
                let file = open_lock_file(&opened)?;
                match file.try_lock_shared() {
                    Ok(()) => Ok((file, true)),
                    Err(TryLockError::WouldBlock) => Ok((file, false)),
                    Err(TryLockError::Error(source)) => Err(Error::Io {
                        path: opened,
                        source,
                    }),
                }
            })
            .await?;
            let file = if free {
                file
            } else {
                if matches!(wait, Wait::Never) {
                    return Ok(None);
                }
                let gate = Self::gate(&path);
                let gate_guard = match deadline {
                    Some(deadline) => match timeout_at(deadline, gate.lock_owned()).await {
                        Ok(guard) => guard,
                        Err(_) => return Ok(None),
                    },
                    None => gate.lock_owned().await,
                };
                let granted = wait_shared_in_kernel(file, gate_guard, &path)?;
                let outcome = match deadline {
                    Some(deadline) => match timeout_at(deadline, granted).await {
                        Ok(outcome) => outcome,
                        // The helper thread releases the lock when it comes.
                        Err(_) => return Ok(None),
                    },
                    None => granted.await,
                };
                match outcome {
                    // The gate opens here: shared holders do not keep it.
                    Ok((Ok(file), _gate)) => file,
                    Ok((Err(source), _)) => return Err(Error::Io { path, source }),
                    Err(_) => return Err(Error::Helper("the lock helper thread died".into())),
                }
            };
            let locked = path.clone();
            let (file, token) = off_executor(move || {
                if !still_linked(&file, &locked)? {
                    return Ok((file, None));
                }
                let token = current_token(&file, &locked)?;
                Ok((file, Some(token)))
            })
            .await?;
            let Some(token) = token else {
                // Deleted or replaced while we waited: lock the file that is there now.
                drop(file);
                continue;
            };
            return Ok(Some(FileHeld {
                file,
                path,
                _gate: None,
                token,
            }));
        }
    }
}

type Granted = oneshot::Receiver<(std::io::Result<File>, GateGuard)>;

/// Sleeps in a blocking `lock_shared()` on a helper thread that owns the gate meanwhile.
fn wait_shared_in_kernel(file: File, gate: GateGuard, path: &Path) -> Result<Granted, Error> {
    let (send, receive) = oneshot::channel();
    std::thread::Builder::new()
        .name("chainlock-flock-sh".into())
        .spawn(move || {
            let outcome = file.lock_shared().map(|()| file);
            // If the acquirer gave up, dropping the value releases the lock, then the gate.
            drop(send.send((outcome, gate)));
        })
        .map_err(io_error(path))?;
    Ok(receive)
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
