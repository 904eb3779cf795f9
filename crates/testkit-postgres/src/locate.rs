//! Finding PostgreSQL's programs and a user they may run as.

use std::path::PathBuf;
use std::process::Command;

/// How an error about a missing installation starts.
pub(crate) const NOT_INSTALLED: &str = "PostgreSQL is not installed";

/// The directory holding `initdb` and `postgres`: the `PATH` first, then the newest
/// `/usr/lib/postgresql/<version>/bin` (Debian's layout).
pub(crate) fn bin_dir() -> Result<PathBuf, String> {
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default();
    for dir in on_path {
        if dir.join("initdb").is_file() && dir.join("postgres").is_file() {
            return Ok(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| format!("{NOT_INSTALLED} (no initdb on the PATH or under /usr/lib/postgresql/*/bin)"))
}

/// `None` when this process is not root (the server runs as this user); otherwise the uid and
/// gid of `nobody`, whom PostgreSQL accepts.
pub(crate) fn unprivileged_user() -> Result<Option<(u32, u32)>, String> {
    if id(&["-u"])? != 0 {
        return Ok(None);
    }
    Ok(Some((id(&["-u", "nobody"])?, id(&["-g", "nobody"])?)))
}

fn id(args: &[&str]) -> Result<u32, String> {
    let out = Command::new("id").args(args).output().map_err(|e| format!("id: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("`id {}` gave no number", args.join(" ")))
}
