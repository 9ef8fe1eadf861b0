//! An in-memory file system locked hand over hand.
//!
//! Directories and files are one recursive node type, each behind its own `RwLock`. Paths
//! are walked with [`chainlock::walk`]: lookups (`read`, `list`, `stat`) read-lock every node
//! on the path; changes (`create`, `write`, `rename`, `rm -r`) crab: they read-lock the path
//! and write-lock only the node they change; `mkdir -p` takes upgradable reads on its way
//! and upgrades a directory in place only where it must create a component (upgradable
//! reads exclude each other: concurrent `mkdir -p` calls pass the root one at a time). `rm -r` unlinks the entry under its parent's write lock,
//! then closes the whole subtree node by node (the closed marker makes a node behave as
//! absent): a walk already inside finishes first, and no write lands in a removed file after
//! `rm -r` returns.
//!
//! [`FileSystem::check`] verifies, on a quiescent file system, that no node is reachable
//! twice, that the bytes in reachable files are exactly those written minus those removed,
//! and that no removed file changed after its `rm -r` returned.

use crate::Rng;
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::walk::{Crab, Shared, Step, Upgrade, Walker};
use chainlock::{ChainNode, Exit};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A directory (`data == None`) or a file.
#[derive(ChainNode, Default)]
struct Node {
    /// Set by `rm -r` on every node of the removed subtree.
    #[chain(closed)]
    removed: bool,
    #[chain(children)]
    entries: BTreeMap<String, Arc<RwLock<Node>>>,
    data: Option<Vec<u8>>,
}

type Handle = Arc<RwLock<Node>>;

/// Why a file-system operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// A component of the path does not exist (or was removed).
    #[error("no such file or directory")]
    NotFound,
    /// A component of the path is a file.
    #[error("not a directory")]
    NotADirectory,
    /// The path names a directory where a file was expected.
    #[error("is a directory")]
    IsADirectory,
    /// The name is taken.
    #[error("file exists")]
    Exists,
    /// A name (or path component) is empty, `.`, `..` or contains `/`.
    #[error("invalid name")]
    InvalidName,
    /// The operation would remove the root.
    #[error("the root cannot be removed")]
    Root,
    /// The path has more than [`MAX_PATH_DEPTH`] components.
    #[error("the path is deeper than {MAX_PATH_DEPTH} levels")]
    TooDeep,
}

impl From<Exit> for FsError {
    fn from(exit: Exit) -> Self {
        match exit {
            Exit::Absent { .. } => FsError::NotFound,
            Exit::TooDeep { .. } => FsError::TooDeep,
            // No deadlines, no `Here` in crab mode, and a tree has no cycles.
            other => unreachable!("a file-system walk ended with {other}"),
        }
    }
}

/// The most directories a path may go through: paths are refused beyond it, and a file or
/// directory is never created deeper.
pub const MAX_PATH_DEPTH: usize = 64;

/// A removed file and its size when `rm -r` closed it.
type Tombstone = (Handle, usize);

/// An in-memory file system whose nodes are locked hand over hand.
///
/// # Examples
///
/// ```
/// use chainlock_trees::{FileSystem, FsError};
/// use std::time::Duration;
///
/// let fs = FileSystem::new(Duration::ZERO);
/// fs.mkdir_p("/usr/lib")?;
/// fs.create("/usr/lib", "libc.so")?;
/// fs.write("/usr/lib/libc.so", b"ELF")?;
/// assert_eq!(fs.read("/usr/lib/libc.so")?, b"ELF");
/// fs.remove_all("/usr")?;
/// assert_eq!(fs.stat("/usr/lib/libc.so"), Err(FsError::NotFound));
/// assert!(fs.check().is_empty());
/// # Ok::<(), FsError>(())
/// ```
pub struct FileSystem {
    root: Handle,
    walker: Walker,
    /// Bytes written by successful writes, and bytes taken away by `rm -r`.
    written: AtomicU64,
    removed: AtomicU64,
    tombstones: Mutex<Vec<Tombstone>>,
    /// Time spent at the target of each change, standing for I/O (0: none).
    io: Duration,
}

/// A path's components (empty ones, from `//` or a trailing `/`, are skipped), at most
/// [`MAX_PATH_DEPTH`].
fn components(path: &str) -> Result<Vec<String>, FsError> {
    let parts: Vec<String> = path
        .split('/')
        .filter(|part| !part.is_empty())
        .map(|part| name(part).map(str::to_owned))
        .collect::<Result<_, _>>()?;
    if parts.len() > MAX_PATH_DEPTH {
        return Err(FsError::TooDeep);
    }
    Ok(parts)
}

/// `name` if it can name an entry: not empty, `.` or `..`, and without `/`.
fn name(name: &str) -> Result<&str, FsError> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        Err(FsError::InvalidName)
    } else {
        Ok(name)
    }
}

impl FileSystem {
    /// An empty file system; every change and read spends `io` at its target, standing
    /// for I/O (`Duration::ZERO`: none).
    pub fn new(io: Duration) -> Self {
        FileSystem {
            root: Arc::default(),
            // Paths here are at most a few levels deep; a deeper walk is a bug.
            walker: Walker::new().max_depth(MAX_PATH_DEPTH),
            written: AtomicU64::new(0),
            removed: AtomicU64::new(0),
            tombstones: Mutex::default(),
            io,
        }
    }

    fn io(&self) {
        if !self.io.is_zero() {
            std::thread::sleep(self.io);
        }
    }

    /// `mkdir -p`: upgradable reads hand over hand (other readers pass), each directory
    /// upgraded in place only where a component is missing. Upgradable reads exclude each
    /// other, so concurrent `mkdir -p` calls pass through the root one at a time.
    ///
    /// # Errors
    ///
    /// [`FsError::NotADirectory`] when a component is a file; [`FsError::InvalidName`] for a bad name or path component.
    pub fn mkdir_p(&self, path: &str) -> Result<(), FsError> {
        let parts = components(path)?;
        let mut error = None;
        let target = self.walker.descend(&self.root, Upgrade, |dir, depth| {
            if dir.data.is_some() {
                error = Some(FsError::NotADirectory);
                return Step::Absent;
            }
            let Some(name) = parts.get(depth) else {
                return Step::Here;
            };
            if let Some(child) = dir.entries.get(name) {
                return Step::Descend(child.clone());
            }
            let child = dir
                .upgrade()
                .entries
                .entry(name.clone())
                .or_default()
                .clone();
            Step::Descend(child)
        });
        match (target, error) {
            (_, Some(error)) => Err(error),
            (Ok(dir), None) if dir.data.is_some() => Err(FsError::NotADirectory),
            (Ok(_), None) => Ok(()),
            (Err(exit), None) => Err(exit.into()),
        }
    }

    /// Creates an empty file in an existing directory.
    ///
    /// # Errors
    ///
    /// [`FsError::NotFound`] without the directory, [`FsError::NotADirectory`], [`FsError::Exists`]; [`FsError::InvalidName`] for a bad name or path component.
    pub fn create(&self, dir: &str, file_name: &str) -> Result<(), FsError> {
        let file_name = name(file_name)?;
        let dir = components(dir)?;
        if dir.len() == MAX_PATH_DEPTH {
            return Err(FsError::TooDeep);
        }
        let mut dir = self.walker.descend_keys(&self.root, Crab, dir)?;
        if dir.data.is_some() {
            return Err(FsError::NotADirectory);
        }
        if dir.entries.contains_key(file_name) {
            return Err(FsError::Exists);
        }
        let file = Node {
            data: Some(Vec::new()),
            ..Node::default()
        };
        dir.entries
            .insert(file_name.to_owned(), Arc::new(RwLock::new(file)));
        Ok(())
    }

    /// Appends to a file.
    ///
    /// # Errors
    ///
    /// [`FsError::NotFound`], [`FsError::IsADirectory`]; [`FsError::InvalidName`] for a bad name or path component.
    pub fn write(&self, path: &str, bytes: &[u8]) -> Result<(), FsError> {
        let mut file = self
            .walker
            .descend_keys(&self.root, Crab, components(path)?)?;
        let data = file.data.as_mut().ok_or(FsError::IsADirectory)?;
        self.io();
        data.extend_from_slice(bytes);
        self.written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// A file's contents.
    ///
    /// # Errors
    ///
    /// [`FsError::NotFound`], [`FsError::IsADirectory`]; [`FsError::InvalidName`] for a bad name or path component.
    pub fn read(&self, path: &str) -> Result<Vec<u8>, FsError> {
        let file = self
            .walker
            .descend_keys(&self.root, Shared, components(path)?)?;
        self.io();
        file.data.clone().ok_or(FsError::IsADirectory)
    }

    /// A directory's entry names, in order.
    ///
    /// # Errors
    ///
    /// [`FsError::NotFound`], [`FsError::NotADirectory`]; [`FsError::InvalidName`] for a bad name or path component.
    pub fn list(&self, path: &str) -> Result<Vec<String>, FsError> {
        let dir = self
            .walker
            .descend_keys(&self.root, Shared, components(path)?)?;
        if dir.data.is_some() {
            return Err(FsError::NotADirectory);
        }
        Ok(dir.entries.keys().cloned().collect())
    }

    /// The size of a file, or the number of entries of a directory.
    ///
    /// # Errors
    ///
    /// [`FsError::NotFound`]; [`FsError::InvalidName`] for a bad name or path component.
    pub fn stat(&self, path: &str) -> Result<usize, FsError> {
        let node = self
            .walker
            .descend_keys(&self.root, Shared, components(path)?)?;
        Ok(node.data.as_ref().map_or(node.entries.len(), Vec::len))
    }

    /// Renames an entry within one directory; the new name must be free (renaming an entry
    /// to its own name does nothing).
    ///
    /// # Errors
    ///
    /// [`FsError::NotFound`] (directory or entry), [`FsError::Exists`] when `to` is taken,
    /// [`FsError::InvalidName`] for a bad name or path component.
    pub fn rename(&self, dir: &str, from: &str, to: &str) -> Result<(), FsError> {
        let (from, to) = (name(from)?, name(to)?);
        let mut dir = self
            .walker
            .descend_keys(&self.root, Crab, components(dir)?)?;
        if from == to {
            return if dir.entries.contains_key(from) {
                Ok(())
            } else {
                Err(FsError::NotFound)
            };
        }
        if dir.entries.contains_key(to) {
            return Err(FsError::Exists);
        }
        let entry = dir.entries.remove(from).ok_or(FsError::NotFound)?;
        dir.entries.insert(to.to_owned(), entry);
        Ok(())
    }

    /// `rm -r`: unlinks the entry under its parent's write lock, then closes its subtree
    /// node by node, each under its write lock, so that a walk already inside finishes
    /// first and every later one finds it closed.
    ///
    /// # Errors
    ///
    /// [`FsError::NotFound`]; [`FsError::Root`] for the root, which cannot be removed; [`FsError::InvalidName`] for a bad name or path component.
    pub fn remove_all(&self, path: &str) -> Result<(), FsError> {
        let mut parts = components(path)?;
        let name = parts.pop().ok_or(FsError::Root)?;
        let mut parent = self.walker.descend_keys(&self.root, Crab, parts)?;
        let entry = parent.entries.remove(&name).ok_or(FsError::NotFound)?;
        drop(parent);
        let mut pending = vec![entry];
        while let Some(handle) = pending.pop() {
            let mut node = handle.write();
            node.removed = true;
            pending.extend(node.entries.values().cloned());
            if let Some(data) = &node.data {
                self.removed.fetch_add(data.len() as u64, Ordering::Relaxed);
                self.tombstones.lock().push((handle.clone(), data.len()));
            }
        }
        Ok(())
    }
}

impl FileSystem {
    /// One random operation of a client on a small namespace where clients collide
    /// (directories `d0`–`d2` up to 3 deep, files `f0`–`f2`): 10% `mkdir -p`, 10% create,
    /// 35% write, 20% read, 10% list, 8% stat, 5% rename, 2% `rm -r`.
    ///
    /// # Errors
    ///
    /// What the operation answered (missing paths and taken names are frequent).
    pub fn random_operation(&self, rng: &mut Rng) -> Result<(), FsError> {
        let depth = rng.below(4);
        let mut dir = String::new();
        for _ in 0..depth {
            dir.push_str(["/d0", "/d1", "/d2"][rng.below(3) as usize]);
        }
        let name = format!("f{}", rng.below(3));
        let file = format!("{dir}/{name}");
        match rng.below(100) {
            0..10 => self.mkdir_p(&dir),
            10..20 => self.create(&dir, &name),
            20..55 => self.write(&file, b"0123456789"),
            55..75 => self.read(&file).map(drop),
            75..85 => self.list(&dir).map(drop),
            85..93 => self.stat(&file).map(drop),
            93..98 => self.rename(&dir, &name, &format!("f{}", rng.below(3))),
            _ => self.remove_all(&dir),
        }
    }
}

impl FileSystem {
    /// The bytes written by successful writes, and those taken away by `rm -r`.
    pub fn bytes(&self) -> (u64, u64) {
        (
            self.written.load(Ordering::Relaxed),
            self.removed.load(Ordering::Relaxed),
        )
    }

    /// How many files `rm -r` removed.
    pub fn removed_files(&self) -> usize {
        self.tombstones.lock().len()
    }

    /// The invariants' violations, in words (none on a correct, quiescent file system):
    /// a node reachable twice, a reachable node marked removed, reachable bytes that differ
    /// from those written minus those removed (a lost or duplicated write), a removed file
    /// that changed after its `rm -r` returned. It cannot see a violation that leaves no wrong
    /// answer behind: a walk that released a parent too early and then found its node closed
    /// simply failed (the walks' own order tests catch that), and a lost *empty* entry adds
    /// no bytes. Removed files are kept (as tombstones) for this check, so memory grows with
    /// every `rm -r`: this file system is a test bed, not a store.
    pub fn check(&self) -> Vec<String> {
        let fs = self;
        let mut violations = Vec::new();
        let mut seen = HashSet::new();
        let mut bytes = 0u64;
        let mut pending = vec![("/".to_owned(), fs.root.clone())];
        while let Some((path, handle)) = pending.pop() {
            if !seen.insert(Arc::as_ptr(&handle)) {
                violations.push(format!("{path} is reachable twice"));
                continue;
            }
            let node = handle.read();
            if node.removed {
                violations.push(format!("{path} is reachable but removed"));
            }
            bytes += node.data.as_ref().map_or(0, |data| data.len() as u64);
            for (name, child) in &node.entries {
                pending.push((format!("{path}{name}/"), child.clone()));
            }
        }
        let (written, removed) = (
            fs.written.load(Ordering::Relaxed),
            fs.removed.load(Ordering::Relaxed),
        );
        if written.checked_sub(removed) != Some(bytes) {
            violations.push(format!(
            "reachable files hold {bytes} bytes, but {written} were written and {removed} removed"
        ));
        }
        for (handle, size) in fs.tombstones.lock().iter() {
            let now = handle.read().data.as_ref().map_or(0, Vec::len);
            if now != *size {
                violations.push(format!(
                    "a removed file grew from {size} to {now} bytes after its rm -r returned"
                ));
            }
        }
        violations
    }
}

#[cfg(test)]
mod tests {
    use super::{FileSystem, FsError, MAX_PATH_DEPTH};
    use chainlock::Exit;
    use chainlock::chain::Absence;
    use chainlock::walk::Crab;
    use std::time::Duration;

    /// The closed marker is what stops a walk that got hold of a node before its `rm -r`
    /// (here: a handle taken from its parent before the unlink).
    #[test]
    fn a_walk_from_a_handle_taken_before_rm_r_finds_the_subtree_closed() {
        let fs = FileSystem::new(Duration::ZERO);
        fs.mkdir_p("/d").unwrap();
        fs.create("/d", "f").unwrap();
        let d = fs.root.read().entries["d"].clone();
        fs.remove_all("/d").unwrap();
        let outcome = fs.walker.descend_keys(&d, Crab, ["f".to_string()]);
        assert_eq!(
            outcome.err(),
            Some(Exit::Absent {
                level: 0,
                cause: Absence::Closed
            })
        );
        let f = d.read().entries["f"].clone();
        let outcome = fs.walker.descend_keys(&f, Crab, Vec::<String>::new());
        assert_eq!(
            outcome.err(),
            Some(Exit::Absent {
                level: 0,
                cause: Absence::Closed
            })
        );
    }

    #[test]
    fn paths_deeper_than_the_limit_are_an_error_not_a_panic() {
        let fs = FileSystem::new(Duration::ZERO);
        let deepest = "/a".repeat(MAX_PATH_DEPTH);
        assert_eq!(fs.mkdir_p(&format!("{deepest}/a")), Err(FsError::TooDeep));
        fs.mkdir_p(&deepest).unwrap();
        assert_eq!(
            fs.create(&deepest, "f"),
            Err(FsError::TooDeep),
            "a file would be too deep"
        );
        assert_eq!(fs.stat(&format!("{deepest}/f")), Err(FsError::TooDeep));
        assert_eq!(fs.stat(&deepest), Ok(0));
        fs.remove_all("/a").unwrap();
        assert!(fs.check().is_empty());
    }
}
