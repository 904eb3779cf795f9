//! Which `looprail` an agent's settings should run: one that will still be there tomorrow.
//!
//! `hook install` writes a command into the agent's settings, and the agent runs it on every
//! tool call for as long as the settings say so. The `looprail` running `install` is not always
//! such a program: `npx looprail` runs it from npm's cache (`~/.npm/_npx/<hash>/…`), `uvx`
//! from uv's (`…/uv/archive-v0/<hash>/…`), `pipx run` from pipx's, `pnpm dlx`, `bunx` and
//! `yarn dlx` from their own throw-away directories, and any of those may be gone tomorrow.
//! Such a location is recognised by its path's components (never by a substring of the whole
//! path; a build in the temporary directory is a build, not a throw-away copy); the program
//! written is then the
//! `looprail` found on `PATH` outside such places, and when there is none, `install` refuses
//! with the fix instead of writing a command that will stop working.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use crate::HookError;

/// Directory names that hold a package manager's throw-away copies of a program.
const THROWAWAY: &[&str] = &["_npx", "archive-v0", "dlx"];
/// Beginnings of such directory names (`bunx-1000-looprail@latest`, yarn's `xfs-1a2b3c4d`).
const THROWAWAY_PREFIXES: &[&str] = &["bunx-", "xfs-"];

/// True when `program` lives where a package manager keeps throw-away copies: npm's npx cache,
/// uv's cache of `uvx` environments, pnpm's `dlx`, pipx's `run` cache, bunx's and yarn dlx's
/// directories.
///
/// ```
/// use std::path::Path;
/// use looprail_hook::program::is_throwaway;
///
/// assert!(is_throwaway(Path::new("/home/me/.npm/_npx/3c2e/node_modules/@looprail/cli-linux-x64/bin/looprail")));
/// assert!(is_throwaway(Path::new("/home/me/.cache/uv/archive-v0/Xy12/bin/looprail")));
/// assert!(!is_throwaway(Path::new("/home/me/.local/bin/looprail")));
/// assert!(!is_throwaway(Path::new("/usr/lib/node_modules/looprail/bin/looprail")));
/// ```
pub fn is_throwaway(program: &Path) -> bool {
    let names: Vec<&OsStr> = program
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let marked = names.iter().any(|name| {
        THROWAWAY.iter().any(|t| *name == OsStr::new(t))
            || name.to_str().is_some_and(|n| THROWAWAY_PREFIXES.iter().any(|p| n.starts_with(p)))
    });
    let pipx_run =
        names.windows(2).any(|pair| pair[0] == OsStr::new("pipx") && pair[1] == OsStr::new(".cache"));
    marked || pipx_run
}

/// The program the hook command should run: `exe` (the running `looprail`) when it lives in a
/// stable place, else the first `looprail` on `path_var` (the `PATH` value) that does, as
/// found there (a symlink such as `~/.local/bin/looprail` stays the link, so an upgrade
/// behind it is picked up). An error, with the fix, when neither is stable.
pub fn hook_program(exe: &Path, path_var: Option<&OsStr>) -> Result<PathBuf, HookError> {
    if !is_throwaway(exe) {
        return Ok(exe.to_owned());
    }
    let name = format!("looprail{}", std::env::consts::EXE_SUFFIX);
    let installed = path_var
        .into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(&name))
        .find(|candidate| is_program(candidate) && !is_throwaway(candidate));
    installed.ok_or_else(|| {
        HookError::Settings(format!(
            "this looprail runs from a temporary place ({}), which the agent could not run tomorrow, \
             and no installed looprail is on PATH: install it first (`npm install -g looprail`, \
             `uv tool install looprail` or `pip install looprail`), then run `looprail hook install` again",
            exe.display()
        ))
    })
}

#[cfg(unix)]
fn is_program(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_program(path: &Path) -> bool {
    path.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program_in(dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(format!("looprail{}", std::env::consts::EXE_SUFFIX));
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        path
    }

    #[test]
    fn a_throwaway_copy_defers_to_the_installed_program_on_path_or_refuses() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().canonicalize().unwrap();
        let npx = program_in(&home.join(".npm/_npx/3c2e/node_modules/.bin"));
        let installed = program_in(&home.join(".local/bin"));
        let other_npx = program_in(&home.join(".npm/_npx/ffff/node_modules/.bin"));
        let path = std::env::join_paths([other_npx.parent().unwrap(), installed.parent().unwrap()]).unwrap();
        assert_eq!(
            hook_program(&npx, Some(&path)).unwrap(),
            installed,
            "the installed one, not npx's other copy"
        );
        assert_eq!(hook_program(&installed, None).unwrap(), installed, "a stable program is itself");
        let only_npx = std::env::join_paths([other_npx.parent().unwrap()]).unwrap();
        let refused = hook_program(&npx, Some(&only_npx)).unwrap_err().to_string();
        assert!(
            refused.contains("temporary place") && refused.contains("npm install -g looprail"),
            "{refused}"
        );
        assert!(hook_program(&npx, None).is_err());
    }

    #[test]
    fn throwaway_places_are_told_by_whole_components() {
        assert!(is_throwaway(Path::new("/home/me/.local/pipx/.cache/ab12/bin/looprail")));
        assert!(is_throwaway(Path::new("/home/me/.local/share/pnpm/dlx/x/node_modules/.bin/looprail")));
        assert!(!is_throwaway(Path::new("/home/me/my_npx_tools/looprail")), "a name that only contains one");
        assert!(!is_throwaway(Path::new("/home/me/.local/share/uv/tools/looprail/bin/looprail")));
        assert!(is_throwaway(Path::new("/tmp/bunx-1000-looprail@latest/node_modules/.bin/looprail")));
        assert!(!is_throwaway(&std::env::temp_dir().join("ci/looprail/target/debug/looprail")), "a build");
    }
}
