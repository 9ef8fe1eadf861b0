//! The public names of `chainlock` against the Glossary of `DEVELOPMENT.md`: one word per
//! idea, one shape per family. A text scan of `chainlock/src/**/*.rs` (not `__private.rs`,
//! not the `tests/` folders beside the code) for public functions and types, failing on the
//! glossary's forbidden shapes and on a timed wait without its twin.
//!
//! Public functions are the lines `pub fn name` / `pub async fn name` (also `const` and
//! `unsafe`); `pub(crate)` and the methods of traits are not seen. A change of the glossary
//! changes this file in the same commit.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A public function or type, where it is declared.
struct Item {
    name: String,
    /// The file, relative to `chainlock/src`.
    file: String,
    line: usize,
    /// The declaration up to its body (`{`) or `;`, lines joined.
    text: String,
}

/// Descents take a deadline as `verb_until` (glossary: "a descent with a deadline"): these
/// first words, and nothing else, may end in `_until` without `try_`.
const DESCENTS: &[&str] = &["run", "descend", "lock_leaves"];

/// Type names the glossary replaced (old → new), with the new name for the message.
const OLD_TYPES: &[(&str, &str)] = &[
    ("WalkExit", "chainlock::Exit"),
    ("MultiGuard", "DistributedGuards"),
    ("KeySetGuard", "KeyGuards"),
    ("AsyncKeySetGuard", "KeyGuards<AsyncKeyGuard>"),
    ("PermitGuard", "KeyPermit"),
    ("AsyncPermitGuard", "AsyncKeyPermit"),
    ("Permit", "DistributedPermit"),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name != "tests") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs")
            && path.file_name().is_some_and(|name| name != "__private.rs")
        {
            out.push(path);
        }
    }
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The public functions and types of `chainlock/src`.
fn public_items() -> (Vec<Item>, Vec<Item>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("chainlock/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let (mut fns, mut types) = (Vec::new(), Vec::new());
    for path in files {
        let file = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let source = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = source.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let Some(rest) = line.trim().strip_prefix("pub ") else {
                continue;
            };
            let declaration = lines[index..]
                .iter()
                .map(|line| line.trim())
                .scan(false, |done, line| {
                    let this = (!*done).then_some(line);
                    *done = line.contains('{') || line.ends_with(';');
                    this
                })
                .collect::<Vec<_>>()
                .join(" ");
            let item = |name: String| Item {
                name,
                file: file.clone(),
                line: index + 1,
                text: declaration.clone(),
            };
            let mut rest = rest;
            for qualifier in ["const ", "async ", "unsafe "] {
                rest = rest.strip_prefix(qualifier).unwrap_or(rest);
            }
            if let Some(name) = rest.strip_prefix("fn ") {
                fns.push(item(identifier(name)));
            } else if let Some(name) = ["struct ", "enum ", "type ", "trait "]
                .iter()
                .find_map(|kind| rest.strip_prefix(kind))
            {
                types.push(item(identifier(name)));
            }
        }
    }
    (fns, types)
}

/// A setting of an options builder (`fn connect_timeout(mut self, ..) -> Self`, its getter
/// `-> Duration`) names a duration, not a wait: `_timeout` is its word.
fn is_setting(item: &Item) -> bool {
    item.text.contains("self")
        && (item.text.contains("-> Self") || item.text.contains("-> Duration"))
}

/// The timed-wait twin of `name` (`try_x_for` ↔ `try_x_until`, any prefix or `_async`).
fn twin(name: &str) -> Option<String> {
    let (stem, flavor) = name
        .strip_suffix("_async")
        .map_or((name, ""), |stem| (stem, "_async"));
    if !stem.contains("try_") {
        return None;
    }
    if let Some(verb) = stem.strip_suffix("_for") {
        Some(format!("{verb}_until{flavor}"))
    } else {
        stem.strip_suffix("_until")
            .map(|verb| format!("{verb}_for{flavor}"))
    }
}

fn violations() -> Vec<String> {
    let (fns, types) = public_items();
    assert!(
        fns.len() > 100,
        "the scan found only {} public functions: is it reading chainlock/src?",
        fns.len()
    );
    let mut found = Vec::new();
    let mut flag = |item: &Item, why: String| {
        found.push(format!(
            "{}:{}: `{}`: {why}",
            item.file, item.line, item.name
        ));
    };
    let mut names_by_file: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for item in &fns {
        names_by_file
            .entry(&item.file)
            .or_default()
            .insert(&item.name);
    }
    for item in &fns {
        let name = item.name.as_str();
        if name.ends_with("_timeout") && !is_setting(item) {
            flag(item, "a timed wait is `try_verb_for(.., Duration)` / `try_verb_until(.., Instant)`, never `_timeout`".into());
        }
        if name.contains("_many") {
            flag(
                item,
                "several keys at once is `verb_all`, never `_many`".into(),
            );
        }
        if name.contains("_async_until") {
            flag(
                item,
                "the async twin is the same name plus `_async`, last: `verb_until_async`".into(),
            );
        }
        let verb = name.strip_prefix("blocking_").unwrap_or(name);
        if verb.ends_with("_until")
            && !verb.starts_with("try_")
            && !DESCENTS.iter().any(|d| verb.starts_with(d))
        {
            flag(
                item,
                "a lock's deadline is `try_verb_until` (only descents take `verb_until`)".into(),
            );
        }
        if name.starts_with("blocking_") && !item.file.starts_with("distributed") {
            flag(
                item,
                "`blocking_` twins are for the async-first distributed locks only".into(),
            );
        }
        if let Some(twin) = twin(name)
            && !names_by_file[item.file.as_str()].contains(twin.as_str())
        {
            flag(
                item,
                format!("its twin `{twin}` is missing from the same file"),
            );
        }
    }
    for item in &types {
        if let Some((_, new)) = OLD_TYPES.iter().find(|(old, _)| *old == item.name) {
            flag(item, format!("the glossary's name is `{new}`"));
        }
    }
    let semaphores: Vec<&Item> = types
        .iter()
        .filter(|item| item.name == "Semaphore")
        .collect();
    if semaphores.len() > 1 {
        for item in semaphores {
            flag(
                item,
                "no two public types share a name: `striped::Semaphore` and `DistributedSemaphore`"
                    .into(),
            );
        }
    }
    found
}

#[test]
fn public_names_follow_the_glossary() {
    let found = violations();
    assert!(
        found.is_empty(),
        "{} public names do not follow the Glossary of DEVELOPMENT.md:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The scan itself: a twin is found whatever the prefix or flavor, and settings are told
/// from waits.
#[test]
fn the_scan_knows_the_shapes() {
    assert_eq!(twin("try_lock_for").as_deref(), Some("try_lock_until"));
    assert_eq!(
        twin("blocking_try_lock_until").as_deref(),
        Some("blocking_try_lock_for")
    );
    assert_eq!(
        twin("try_enter_for_async").as_deref(),
        Some("try_enter_until_async")
    );
    assert_eq!(twin("descend_until"), None);
    let item = |text: &str| Item {
        name: String::new(),
        file: String::new(),
        line: 0,
        text: text.into(),
    };
    assert!(is_setting(&item(
        "pub fn connect_timeout(mut self, timeout: Duration) -> Self {"
    )));
    assert!(is_setting(&item(
        "pub fn connect_timeout(&self) -> Duration {"
    )));
    assert!(!is_setting(&item(
        "pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<G>> {"
    )));
    let (fns, types) = public_items();
    assert!(
        fns.iter().any(|item| item.name == "new"),
        "the scan sees public functions"
    );
    assert!(
        types.iter().any(|item| item.name == "Exit"),
        "the scan sees public types"
    );
}
