//! The lock file beside a database (`PATH.lock`): one Wharf process at a
//! time writes a store; the holder's pid is written in it so a refusal
//! can name it.

use std::io::{Read, Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// Why a lock was not taken.
pub(crate) enum Locked {
    /// Another process holds it (its pid, when it said).
    Held(Option<u32>),
    /// The lock file cannot be made or locked.
    Io(std::io::Error),
}

/// Locks `PATH.lock` for this process. A lock this same process still
/// holds is one being closed (a restart within the process): it is waited
/// for, briefly.
pub(crate) fn lock(path: &Path) -> Result<std::fs::File, Locked> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&name)
        .map_err(Locked::Io)?;
    let patience = Instant::now() + Duration::from_secs(5);
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut said = String::new();
                let _ = file.rewind();
                let _ = file.read_to_string(&mut said);
                let holder: Option<u32> = said.trim().parse().ok();
                if holder == Some(std::process::id()) && Instant::now() < patience {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                return Err(Locked::Held(holder));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Locked::Io(e)),
        }
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "{}", std::process::id());
    Ok(file)
}
