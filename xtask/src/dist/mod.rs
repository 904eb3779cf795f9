//! `cargo xtask dist [--target TRIPLE]... [--all-targets] [--check] [--pgo | --unoptimised | --quick]`:
//! looprail packaged for people without a Rust toolchain, for Linux on x86_64 and aarch64, glibc
//! and musl ([`targets::ALL`]; the default is this machine's target):
//!
//! - a Python wheel per target, tagged `cp39-abi3` and manylinux2014 (glibc 2.17) or
//!   musllinux_1_2: the `looprail` command and the `looprail` module, the guard in process
//!   with its framework adapters ([`python_wheel`]); and the sdist (the command alone, built from
//!   source), into `target/wheels/`;
//! - the npm packages into `target/npm/`: `@looprail/cli-linux-<cpu>[-musl]` holding the
//!   binary and the guard's Node addon, and `looprail`, the guard's JavaScript API and the
//!   wrapper that runs the binary (packaging/npm/looprail).
//!
//! Every target's native files ([`parts`]) are built through zig, the host's too, so the glibc
//! builds need nothing newer than glibc 2.17 whatever the build machine has. The version is the
//! workspace's. `--pgo` optimises the host target's binary with a profile of the gateway at work
//! and BOLT ([`crate::pgo`], [`crate::bolt`]): `cargo xtask release` builds the published
//! packages that way. `--unoptimised` builds with the `dist-check` profile instead (not
//! optimised, no LTO: the same code and packaging in a fraction of the time, with no size
//! limit). `--quick` packs this machine's packages from what `cargo test --workspace` builds
//! (nothing to build after the tests; linked against this machine's glibc): per-commit CI
//! checks the packages that way. `--check` then checks each package ([`check`]): the glibc
//! floor read from the binary, `--version` and `demo` run (aarch64 under qemu-user), the host's
//! wheel and npm packages installed into fresh places with no Rust on PATH, with a gateway
//! round trip and the guard's ladder from each, and the sdist's workspace (built from source by
//! pip too, with `--pgo`).

mod check;
mod glibc;
mod npm;
mod parts;
mod python_wheel;
mod targets;
mod wheel;

pub use wheel::path_with_first;

use std::path::{Path, PathBuf};
use std::process::Command;

use parts::Parts;
use targets::{ALL, Target};

/// The most a wheel may weigh.
const WHEEL_LIMIT: u64 = 15 << 20;

/// Runs `command`, shown first; an error unless it succeeds.
pub(crate) fn run(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    eprintln!("$ {shown}");
    let status = command.status().map_err(|e| format!("cannot start {shown}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{shown} failed ({status})")) }
}

/// Runs `command` with its output in `log`; on failure the error carries the log's last lines.
pub(crate) fn run_logged(command: &mut Command, log: &Path) -> Result<(), String> {
    let shown = format!("{command:?}");
    eprintln!("$ {shown} > {}", log.display());
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let errors = file.try_clone().map_err(|e| e.to_string())?;
    let status =
        command.stdout(file).stderr(errors).status().map_err(|e| format!("cannot start {shown}: {e}"))?;
    if status.success() {
        return Ok(());
    }
    Err(format!("{shown} failed ({status}):\n{}", log_tail(log)))
}

/// The last lines of the log at `path` (what an error quotes: CI keeps no files).
pub(crate) fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// The workspace's version (`[workspace.package] version`).
pub fn version() -> Result<String, String> {
    let text = std::fs::read_to_string("Cargo.toml").map_err(|e| e.to_string())?;
    let package = text.split("[workspace.package]").nth(1).ok_or("no [workspace.package]")?;
    package
        .lines()
        .find_map(|l| l.strip_prefix("version = "))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .ok_or_else(|| "no workspace version".to_owned())
}

/// This machine's target triple.
pub(crate) fn host() -> Result<String, String> {
    let out = Command::new("rustc").arg("-vV").output().map_err(|e| format!("rustc: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or_else(|| "rustc -vV names no host".to_owned())
}

/// What `dist` was asked for.
struct Plan {
    targets: Vec<Target>,
    check: bool,
    pgo: bool,
    /// This machine's packages from the test build.
    quick: bool,
    /// The Cargo profile the native files are built with: `dist`, or `dist-check` with
    /// `--unoptimised`.
    profile: &'static str,
}

fn plan(flags: &[String], host: &str) -> Result<Plan, String> {
    let mut targets = Vec::new();
    let mut flags_left = flags.iter();
    let (mut check, mut pgo, mut quick, mut unoptimised) = (false, false, false, false);
    while let Some(flag) = flags_left.next() {
        match flag.as_str() {
            "--target" => {
                let triple = flags_left.next().ok_or("--target needs a target triple")?;
                targets.push(Target::named(triple)?);
            }
            "--all-targets" => targets.extend(ALL),
            "--check" => check = true,
            "--pgo" => pgo = true,
            "--quick" => quick = true,
            "--unoptimised" => unoptimised = true,
            other => {
                return Err(format!(
                    "unknown flag `{other}` (dist [--target T]... [--all-targets] [--check] [--pgo | --unoptimised | --quick])"
                ));
            }
        }
    }
    if [pgo, quick, unoptimised].iter().filter(|f| **f).count() > 1 {
        return Err("--pgo, --unoptimised and --quick are three different builds: choose one".into());
    }
    if quick && targets.iter().any(|t| t.triple != host) {
        return Err("--quick packs this machine's test build: it takes no other target".into());
    }
    if targets.is_empty() {
        targets.push(Target::named(host).map_err(|e| format!("this machine: {e}; name one with --target"))?);
    }
    targets.dedup_by_key(|t| t.triple);
    Ok(Plan { targets, check, pgo, quick, profile: if unoptimised { "dist-check" } else { "dist" } })
}

/// `cargo xtask dist`: the packages of every target asked for, then (`--check`) each one
/// installed and run as a user would.
pub fn dist(flags: &[String]) -> Result<(), String> {
    let host = host()?;
    let plan = plan(flags, &host)?;
    let version = version()?;
    let mut built = Vec::new();
    let mut natives = Vec::new();
    for target in &plan.targets {
        let started = std::time::Instant::now();
        let (parts, platform) = if plan.quick {
            (parts::from_tests()?, format!("linux_{}", target.cpu()))
        } else if plan.pgo && target.triple == host {
            let (parts, native) = pgo_build(&version, target)?;
            natives.extend(native);
            (parts, wheel::platform_tag(target))
        } else {
            (native_parts(target, plan.profile, &[])?, wheel::platform_tag(target))
        };
        let wheel = python_wheel::pack(&version, &parts, &platform)?;
        let size = wheel.metadata().map_err(|e| e.to_string())?.len();
        println!(
            "wheel: {} ({:.1} MB; limit {} MB; built in {:.0} s)",
            wheel.display(),
            size as f64 / 1e6,
            WHEEL_LIMIT >> 20,
            started.elapsed().as_secs_f64()
        );
        // The limit is the published wheel's: the other builds are not optimised for size.
        if size > WHEEL_LIMIT && plan.profile == "dist" && !plan.quick {
            return Err(format!("the wheel weighs {size} bytes, over {WHEEL_LIMIT}"));
        }
        let tarball = npm::platform_package(&version, target, &parts)?;
        built.push((*target, wheel, parts, tarball));
    }
    let wrapper = npm::wrapper_package(&version)?;
    let sdist = wheel::sdist(&version)?;
    println!("sdist: {}", sdist.display());
    if !plan.check {
        return Ok(());
    }
    for (target, wheel, parts, tarball) in &built {
        // The quick build is linked against this machine's glibc, not 2.17's.
        let floor = (target.libc == targets::Libc::Glibc && !plan.quick).then_some(targets::GLIBC_FLOOR);
        if let Some(floor) = floor {
            glibc::check_floor(&parts.module, floor)?;
            glibc::check_floor(&parts.addon, floor)?;
        }
        check::binary(target, &parts.binary, &host, floor)?;
        if target.installs_here(&host) {
            check::wheel(wheel)?;
            check::npm(&[tarball.clone(), wrapper.clone()])?;
        }
    }
    for (wheel, binary, floor) in &natives {
        glibc::check_floor(binary, *floor)?;
        check::wheel(wheel)?;
    }
    // A release also has pip build the sdist whole (minutes); per-commit CI checks its contents.
    check::sdist(&sdist, plan.pgo)?;
    Ok(())
}

/// The Rust standard library for `target`, added with rustup when this toolchain lacks it.
fn std_for(target: &Target) -> Result<(), String> {
    let listed = Command::new("rustup").args(["target", "list", "--installed"]).output();
    let installed =
        listed.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l == target.triple));
    if installed {
        return Ok(());
    }
    run(Command::new("rustup").args(["target", "add", target.triple]))
        .map_err(|e| format!("{e}: building for {} needs its standard library", target.triple))
}

/// `target`'s three native files built through zig with Cargo profile `profile` in `target/`,
/// the binary with `env` added.
fn native_parts(target: &Target, profile: &str, env: &[(&'static str, String)]) -> Result<Parts, String> {
    std_for(target)?;
    let binary = wheel::build(target, profile, Path::new("target"), env)?;
    with_libraries(target, profile, binary)
}

/// `binary` with the Python module and the Node addon built through zig for `target` with
/// Cargo profile `profile` in `target/`.
fn with_libraries(target: &Target, profile: &str, binary: PathBuf) -> Result<Parts, String> {
    Ok(Parts {
        binary,
        module: parts::module(target, profile, Path::new("target"))?,
        addon: parts::addon(target, profile, Path::new("target"))?,
    })
}

/// The host's native files with the binary optimised with a profile of the gateway at work (PGO,
/// then BOLT where the machine has it; see [`crate::pgo`]); the module and the addon are built as
/// for any target.
///
/// zig's linker cannot keep a binary's relocations (`--emit-relocs`), which BOLT needs to move
/// whole functions, so the binary is built twice from one profile: for the manylinux2014 wheel and
/// the npm package, linked through zig against glibc 2.17, with PGO; and, where the machine has
/// BOLT, linked natively and rewritten by BOLT, into a second wheel tagged for the build machine's
/// glibc, which pip prefers wherever that glibc is present. The first build's parts, and the second
/// wheel, its binary and its glibc floor.
fn pgo_build(version: &str, target: &Target) -> Result<(Parts, Option<NativeWheel>), String> {
    let tool = crate::pgo::llvm_profdata()?;
    let bolt = crate::bolt::find_or_say();
    let profdata = crate::pgo::profile(&tool)?;
    let portable = crate::pgo::build_env(&profdata, false);
    let binary = wheel::build(target, "dist", &crate::pgo::optimised_dir(), &portable)?;
    let parts = with_libraries(target, "dist", binary)?;
    let Some(bolt) = bolt else { return Ok((parts, None)) };
    let relinkable = crate::pgo::build_env(&profdata, true);
    let native_dir = crate::pgo::dir().join("optimised-native");
    let (binary, floor) = wheel::build_native(&native_dir, &relinkable)?;
    let binary = crate::bolt::optimise(&bolt, &binary)?;
    let native = Parts { binary: binary.clone(), ..parts.clone() };
    let platform = format!("manylinux_{}_{}_{}", floor.0, floor.1, target.cpu());
    let wheel = python_wheel::pack(version, &native, &platform)?;
    Ok((parts, Some((wheel, binary, floor))))
}

/// A natively linked wheel: its path, its binary's, and the glibc version its tag promises.
type NativeWheel = (PathBuf, PathBuf, (u32, u32));
/// The release's packages for people without Rust, as `cargo xtask dist` left them: the wheels
/// in `target/wheels/` (uploaded with maturin) and the npm tarballs in `target/npm/` (the
/// platforms' first, the wrapper that names them last). Without `publish`, only listed.
pub fn publish_packages(version: &str, publish: bool) -> Result<(), String> {
    let listed = |dir: &str, suffix: &str| -> Vec<PathBuf> {
        let mut found = wheel::listed(dir);
        found.retain(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
            // A `--quick` wheel (tagged `linux_<cpu>`: this machine's test build) is never published.
            name.ends_with(suffix) && name.contains(version) && !name.contains("-linux_")
        });
        found.sort_by_key(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("looprail-")));
        found
    };
    let mut wheels = listed("target/wheels", ".whl");
    wheels.extend(listed("target/wheels", ".tar.gz"));
    let tarballs = listed("target/npm", ".tgz");
    if wheels.is_empty() || tarballs.is_empty() {
        println!("\nno wheels or npm packages of {version}: run `cargo xtask dist` (on each platform) first");
        return Ok(());
    }
    if !publish {
        println!("\npackages to publish (with --publish):");
        for package in wheels.iter().chain(&tarballs) {
            println!("  {}", package.display());
        }
        return Ok(());
    }
    run(Command::new(wheel::maturin()?).arg("upload").args(&wheels))?;
    for tarball in &tarballs {
        run(Command::new("npm").args(["publish", "--access", "public"]).arg(tarball))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::plan;

    fn flags(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_flags_choose_targets_and_profile() {
        let host = "x86_64-unknown-linux-gnu";
        let default = plan(&[], host).unwrap();
        assert_eq!(default.targets.len(), 1);
        assert_eq!(
            (default.profile, default.check, default.pgo, default.quick),
            ("dist", false, false, false)
        );
        let all = plan(&flags("--all-targets --check --unoptimised"), host).unwrap();
        assert_eq!(all.targets.len(), 4);
        assert_eq!(all.profile, "dist-check");
        let quick = plan(&flags("--check --quick"), host).unwrap();
        assert!(quick.quick && quick.targets.len() == 1 && quick.targets[0].triple == host);
        assert!(
            plan(&flags("--quick --all-targets"), host).is_err(),
            "the test build is this machine's only"
        );
        assert!(plan(&flags("--quick --unoptimised"), host).is_err());
        let two =
            plan(&flags("--target aarch64-unknown-linux-musl --target x86_64-unknown-linux-musl"), host)
                .unwrap();
        assert_eq!(
            two.targets.iter().map(|t| t.triple).collect::<Vec<_>>(),
            ["aarch64-unknown-linux-musl", "x86_64-unknown-linux-musl"]
        );
        assert!(plan(&flags("--pgo --quick"), host).is_err(), "the published build is never the quick one");
        assert!(plan(&flags("--target"), host).is_err());
        assert!(plan(&flags("--target x86_64-apple-darwin"), host).is_err());
        assert!(plan(&flags("--no-pgo"), host).is_err(), "an unknown flag is refused, not ignored");
        assert!(plan(&[], "x86_64-apple-darwin").is_err(), "a host with no package target must name one");
    }
}
