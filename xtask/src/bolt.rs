//! BOLT, the post-link optimiser, on the `looprail` binary the packages ship, after PGO
//! ([`mod@crate::pgo`]).
//!
//! PGO lays out each function's blocks by how often they run; the functions themselves stay
//! where the linker put them, so the ones a request runs are spread over the binary's 14 MB of
//! code. At one client the gateway's request path runs cold (the client and the upstream ran
//! in between and evicted it), so the cache lines and pages of code it touches miss.
//! BOLT rewrites the linked binary from a profile of it at work: the functions that ran packed
//! together, their cold blocks split off. Beside the same PGO build on the peers benchmark it
//! took a third off the gateway's own time at one client and about 0.1 ms off the added time
//! (docs/gateway.md, "Beside nginx and LiteLLM").
//!
//! The steps, under `target/pgo/bolt/`:
//!
//! 1. the PGO build linked with its relocations and symbols kept ([`crate::pgo::build_env`]);
//! 2. `llvm-bolt -instrument`: a copy that counts the branches it takes;
//! 3. trained with the same load as PGO ([`crate::pgo::train`]), each gateway writing its
//!    counts on exit;
//! 4. the counts merged (`merge-fdata`), the binary rewritten from them ([`REWRITE`]: the
//!    layout, and its hot code on huge pages), then stripped with
//!    rustup's `llvm-strip` (binutils' `strip` cannot place BOLT's new sections).
//!
//! BOLT comes with LLVM, not with rustup: on Debian and Ubuntu it is the `bolt-NN` package
//! (`.ci/run` installs it). Without it the packages carry the PGO build and a line says so.

use std::path::{Path, PathBuf};
use std::process::Command;

/// BOLT's two programs, as installed.
#[derive(Debug, Clone)]
pub struct Bolt {
    /// `llvm-bolt` (its real path: the instrumentation runtime is found beside it).
    llvm_bolt: PathBuf,
    /// `merge-fdata`, from the same installation.
    merge_fdata: PathBuf,
}

/// The newest LLVM release whose versioned names (`llvm-bolt-NN`) are looked for, down to the
/// first that had BOLT's instrumentation.
const NEWEST: u32 = 30;
const OLDEST: u32 = 16;

/// How the binary is rewritten. The layout is the one rustc's own release builds use: blocks by
/// ext-TSP, functions by cache-directed sort, each function's cold blocks split off. `-hugify`
/// adds a few lines run at the program's start that ask the kernel to map the hot code on 2 MB
/// pages (`madvise`; on kernels before 5.4, a copy of it in anonymous memory), so a request's
/// code takes a few TLB entries instead of hundreds; nothing is done when transparent huge pages
/// are off. Beside the same rewrite without it (peers benchmark, one client, three runs): the
/// gateway's own time lower in 20 of 24 cells, the added time in 18 of 24.
const REWRITE: [&str; 7] = [
    "-reorder-blocks=ext-tsp",
    "-reorder-functions=cdsort",
    "-split-functions",
    "-split-strategy=cdsplit",
    "-split-all-cold",
    "-split-eh",
    "-hugify",
];

/// BOLT on this machine's `PATH`: `llvm-bolt`, else the newest `llvm-bolt-NN`.
pub fn find() -> Result<Bolt, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    find_in(&std::env::split_paths(&path).collect::<Vec<_>>())
}

/// [`find`], or `None` after a line saying the binary gets PGO only, and why.
pub fn find_or_say() -> Option<Bolt> {
    find().map_err(|why| eprintln!("bolt: skipped, the binary is optimised with PGO only: {why}")).ok()
}

/// BOLT in `dirs`: `llvm-bolt`, else the newest `llvm-bolt-NN`, with the `merge-fdata` of the
/// same installation (beside `llvm-bolt`'s real path, or named with the same version).
fn find_in(dirs: &[PathBuf]) -> Result<Bolt, String> {
    let names = std::iter::once(String::new()).chain((OLDEST..=NEWEST).rev().map(|v| format!("-{v}")));
    for suffix in names {
        let Some(found) = dirs.iter().map(|d| d.join(format!("llvm-bolt{suffix}"))).find(|p| p.is_file())
        else {
            continue;
        };
        let llvm_bolt = std::fs::canonicalize(&found).map_err(|e| format!("{}: {e}", found.display()))?;
        let beside = llvm_bolt.parent().map(|d| d.join("merge-fdata"));
        let merge_fdata = beside
            .into_iter()
            .chain(dirs.iter().map(|d| d.join(format!("merge-fdata{suffix}"))))
            .find(|p| p.is_file())
            .ok_or_else(|| format!("{} has no merge-fdata beside it", found.display()))?;
        return Ok(Bolt { llvm_bolt, merge_fdata });
    }
    Err("no llvm-bolt on PATH (Debian and Ubuntu: the bolt-NN package)".to_owned())
}

/// `binary` (a PGO build linked for BOLT: [`crate::pgo::build_env`]) rewritten from a profile
/// of it at work, stripped; its path. The same `binary` (by size and time) is not done twice.
pub fn optimise(bolt: &Bolt, binary: &Path) -> Result<PathBuf, String> {
    let dir = crate::pgo::dir().join("bolt");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = dir.join("looprail");
    let stamp = dir.join("optimised-from");
    // The flags are part of the stamp: a binary rewritten with other flags is done again.
    let from = format!("{}\n{}", crate::pgo::stamp_of(binary)?, REWRITE.join(" "));
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == from) && out.is_file() {
        eprintln!("bolt: {} is this build's", out.display());
        return Ok(out);
    }
    let _ = std::fs::remove_file(&stamp);
    let instrumented = dir.join("instrumented");
    let counts = dir.join("counts");
    crate::dist::run_logged(
        Command::new(&bolt.llvm_bolt)
            .arg(binary)
            .arg("-instrument")
            .arg("-o")
            .arg(&instrumented)
            // One file per process, so nothing the training starts overwrites another's.
            .arg(format!("--instrumentation-file={}", counts.join("looprail").display()))
            .arg("--instrumentation-file-append-pid"),
        &dir.join("instrument.log"),
    )?;
    let raw = crate::pgo::trained_counts(&instrumented, &dir, &counts, "fdata")?;
    let profile = dir.join("profile.fdata");
    crate::dist::run_logged(
        Command::new(&bolt.merge_fdata).args(&raw).arg("-q").arg("-o").arg(&profile),
        &dir.join("merge.log"),
    )?;
    let rewritten = dir.join("looprail.unstripped");
    crate::dist::run_logged(
        Command::new(&bolt.llvm_bolt)
            .arg(binary)
            .arg("-o")
            .arg(&rewritten)
            .arg(format!("-data={}", profile.display()))
            .args(REWRITE),
        &dir.join("optimise.log"),
    )?;
    let strip = crate::pgo::llvm_tool("llvm-strip")?;
    crate::dist::run(Command::new(strip).arg("-o").arg(&out).arg(&rewritten))?;
    for done in [&instrumented, &rewritten] {
        let _ = std::fs::remove_file(done);
    }
    let works =
        Command::new(&out).arg("--version").output().map_err(|e| format!("{}: {e}", out.display()))?;
    if !works.status.success() {
        return Err(format!(
            "the binary BOLT wrote does not run: {}",
            String::from_utf8_lossy(&works.stderr)
        ));
    }
    std::fs::write(&stamp, from).map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty executable-looking file at `path`.
    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, b"").expect("file");
    }

    #[test]
    fn the_newest_versioned_bolt_is_found_through_its_link_with_merge_fdata_beside_it() {
        let root = std::env::temp_dir().join(format!("looprail-bolt-find-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // Debian's layout: /usr/bin/llvm-bolt-NN links to /usr/lib/llvm-NN/bin/llvm-bolt.
        for version in [17, 19] {
            let real = root.join(format!("lib/llvm-{version}/bin"));
            touch(&real.join("llvm-bolt"));
            touch(&real.join("merge-fdata"));
            std::fs::create_dir_all(root.join("bin")).expect("bin");
            std::os::unix::fs::symlink(real.join("llvm-bolt"), root.join(format!("bin/llvm-bolt-{version}")))
                .expect("link");
        }
        let found = find_in(&[root.join("empty"), root.join("bin")]).expect("found");
        let real = std::fs::canonicalize(root.join("lib/llvm-19/bin")).expect("real");
        assert_eq!(found.llvm_bolt, real.join("llvm-bolt"));
        assert_eq!(found.merge_fdata, real.join("merge-fdata"));
        // An unversioned llvm-bolt wins over any versioned one.
        touch(&root.join("plain/llvm-bolt"));
        touch(&root.join("plain/merge-fdata"));
        let found = find_in(&[root.join("bin"), root.join("plain")]).expect("found");
        assert_eq!(found.llvm_bolt, std::fs::canonicalize(root.join("plain/llvm-bolt")).expect("real"));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn without_bolt_or_its_merge_tool_the_error_says_what_is_missing() {
        let root = std::env::temp_dir().join(format!("looprail-bolt-none-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let error = find_in(std::slice::from_ref(&root)).expect_err("none");
        assert!(error.contains("no llvm-bolt"), "{error}");
        touch(&root.join("llvm-bolt"));
        let error = find_in(std::slice::from_ref(&root)).expect_err("no merge-fdata");
        assert!(error.contains("merge-fdata"), "{error}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
