//! Watching the agents directory and the configuration file (`notify`,
//! debounced): a path that has been quiet for [`QUIET`] becomes a reload
//! trigger, if what it holds changed. Files still being written produce no
//! trigger until they stop; files only read (by the reload itself, a
//! backup, an editor opening them) produce none, and cost a look at those
//! files only, not at the whole directory.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{DebounceEventResult, DebouncedEventKind, Debouncer, new_debouncer};

use super::ReloadHandle;

/// How long a path must go without events before it is looked at.
pub const QUIET: Duration = Duration::from_millis(100);

/// Watches until dropped.
pub struct Watch {
    _debouncer: Debouncer<RecommendedWatcher>,
}

/// Starts watching `agents_dir` (not its subdirectories) and, when given,
/// the configuration file (through its directory, so that an editor's
/// rename into place is seen).
pub fn watch(
    agents_dir: &Path,
    config_file: Option<&Path>,
    handle: ReloadHandle,
) -> Result<Watch, String> {
    let agents = agents_dir
        .canonicalize()
        .map_err(|e| format!("agents directory `{}`: {e}", agents_dir.display()))?;
    let config = match config_file {
        Some(file) => Some(canonical_file(file)?),
        None => None,
    };
    let (agents_in, config_in) = (agents.clone(), config.clone());
    let mut seen_config = config.as_deref().map(stamp);
    let mut seen_files = dir_stamps(&agents);
    let mut debouncer = new_debouncer(QUIET, move |events: DebounceEventResult| match events {
        Ok(events) => {
            let settled = events
                .iter()
                .filter(|e| e.kind == DebouncedEventKind::Any)
                .map(|e| e.path.as_path());
            let (mut config, mut touched) = (false, Vec::new());
            for path in settled {
                config |= config_in.as_deref() == Some(path);
                if path.parent() == Some(agents_in.as_path()) && !hidden(path) {
                    touched.push(path);
                }
            }
            // An event is only a hint: what counts is whether the file's
            // stamp (size, times, inode) moved since the last look.
            if config {
                let now = config_in.as_deref().map(stamp);
                config = now != seen_config;
                seen_config = now;
            }
            // Only the files named (every one when the configuration
            // changed): a directory of thousands being read (by a start
            // that loads while serving, say) costs a stat per file read,
            // not a scan of the directory every quiet period. A file
            // still changing is looked at once it settles.
            let files = if config {
                let now = dir_stamps(&agents_in);
                let moved = now != seen_files;
                seen_files = now;
                moved
            } else {
                // Every one is looked at (and its stamp kept), moved or not.
                let mut moved = false;
                for path in touched {
                    moved |= restamp(&mut seen_files, path);
                }
                moved
            };
            if config {
                handle.config();
            } else if files {
                handle.files();
            }
        }
        Err(err) => tracing::warn!(error = %err, "watching for changes failed"),
    })
    .map_err(|e| format!("cannot watch for changes: {e}"))?;
    let watcher = debouncer.watcher();
    watcher
        .watch(&agents, RecursiveMode::NonRecursive)
        .map_err(|e| format!("cannot watch `{}`: {e}", agents.display()))?;
    if let Some(dir) = config.as_deref().and_then(Path::parent)
        && dir != agents
    {
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| format!("cannot watch `{}`: {e}", dir.display()))?;
    }
    tracing::info!(dir = %agents.display(), config = ?config, "watching for changes");
    Ok(Watch {
        _debouncer: debouncer,
    })
}

/// The file's absolute path, with its directory's symlinks resolved (the
/// file itself may be replaced, so it is not resolved).
fn canonical_file(file: &Path) -> Result<PathBuf, String> {
    let name = file
        .file_name()
        .ok_or_else(|| format!("`{}` is not a file", file.display()))?;
    let dir = match file.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir.to_path_buf(),
        None => PathBuf::from("."),
    };
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("`{}`: {e}", dir.display()))?;
    Ok(dir.join(name))
}

/// What a file is now, without reading it (reading would be an event of
/// its own): `None` when it is not there.
type Stamp = Option<(u64, u64, std::time::SystemTime, std::time::SystemTime)>;

fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((
        meta.len(),
        meta.ino(),
        meta.modified().ok()?,
        std::time::UNIX_EPOCH + Duration::new(meta.ctime().max(0) as u64, meta.ctime_nsec() as u32),
    ))
}

/// The stamps of the directory's files that could be components.
fn dir_stamps(dir: &Path) -> BTreeMap<OsString, Stamp> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !hidden(&e.path()))
        .map(|e| (e.file_name(), stamp(&e.path())))
        .collect()
}

/// Looks at `path` again; whether its stamp moved (it appeared, went, or
/// changed).
fn restamp(seen: &mut BTreeMap<OsString, Stamp>, path: &Path) -> bool {
    let Some(name) = path.file_name() else {
        return false;
    };
    let now = stamp(path);
    if seen.get(name).copied().flatten() == now {
        return false;
    }
    match now {
        Some(_) => seen.insert(name.to_os_string(), now),
        None => seen.remove(name),
    };
    true
}

/// Editors' and `wharf sign`'s temporary files.
fn hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.as_encoded_bytes().starts_with(b"."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_looked_at_again_moves_only_when_it_appeared_changed_or_went() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.wasm");
        let mut seen = dir_stamps(dir.path());
        assert!(!restamp(&mut seen, &path), "absent, and absent before");
        std::fs::write(&path, b"one").unwrap();
        assert!(restamp(&mut seen, &path), "appeared");
        assert!(!restamp(&mut seen, &path), "only read");
        std::fs::write(&path, b"three").unwrap();
        assert!(restamp(&mut seen, &path), "changed");
        assert_eq!(seen, dir_stamps(dir.path()));
        std::fs::remove_file(&path).unwrap();
        assert!(restamp(&mut seen, &path), "went");
        assert!(seen.is_empty());
    }
}
