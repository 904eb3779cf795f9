//! The platforms the packages are built for: Linux on x86_64 and aarch64, each with glibc and
//! with musl. Every one is cross-built with zig (maturin's `--zig`), the host's own too, so a
//! glibc binary links against glibc 2.17's symbols whatever glibc the build machine has.

/// The C library a Linux target links against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Libc {
    /// GNU libc, dynamically linked, symbols no newer than 2.17 (manylinux2014).
    Glibc,
    /// musl, linked statically: the binary runs on any Linux of its CPU.
    Musl,
}

/// One platform the packages are built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Rust's target triple.
    pub triple: &'static str,
    /// npm's and Python's word for the CPU (`x64` / `arm64`).
    pub npm_cpu: &'static str,
    /// The C library.
    pub libc: Libc,
    /// The wheel's platform policy, as maturin's `--compatibility` takes it.
    pub wheel_policy: &'static str,
}

/// The four targets `dist --all-targets` builds, the host's first.
pub const ALL: [Target; 4] = [
    Target {
        triple: "x86_64-unknown-linux-gnu",
        npm_cpu: "x64",
        libc: Libc::Glibc,
        wheel_policy: "manylinux2014",
    },
    Target {
        triple: "x86_64-unknown-linux-musl",
        npm_cpu: "x64",
        libc: Libc::Musl,
        wheel_policy: "musllinux_1_2",
    },
    Target {
        triple: "aarch64-unknown-linux-gnu",
        npm_cpu: "arm64",
        libc: Libc::Glibc,
        wheel_policy: "manylinux2014",
    },
    Target {
        triple: "aarch64-unknown-linux-musl",
        npm_cpu: "arm64",
        libc: Libc::Musl,
        wheel_policy: "musllinux_1_2",
    },
];

/// A target triple's CPU part.
fn cpu_of(triple: &str) -> &str {
    triple.split('-').next().unwrap_or_default()
}

/// The newest glibc symbol version a glibc binary may need (manylinux2014's).
pub const GLIBC_FLOOR: (u32, u32) = (2, 17);

impl Target {
    /// The target named by `triple`, or an error listing the ones there are.
    pub fn named(triple: &str) -> Result<Target, String> {
        ALL.iter().copied().find(|t| t.triple == triple).ok_or_else(|| {
            let known: Vec<&str> = ALL.iter().map(|t| t.triple).collect();
            format!("no package target `{triple}`; targets: {}", known.join(", "))
        })
    }

    /// The npm package's platform part: `linux-x64`, `linux-arm64-musl`, ….
    pub fn npm_platform(&self) -> String {
        match self.libc {
            Libc::Glibc => format!("linux-{}", self.npm_cpu),
            Libc::Musl => format!("linux-{}-musl", self.npm_cpu),
        }
    }

    /// npm's `libc` field for the platform package.
    pub fn npm_libc(&self) -> &'static str {
        match self.libc {
            Libc::Glibc => "glibc",
            Libc::Musl => "musl",
        }
    }

    /// The CPU as Rust and the wheel tags name it: the triple's first part (`x86_64`, `aarch64`).
    pub fn cpu(&self) -> &'static str {
        cpu_of(self.triple)
    }

    /// Whether this machine runs the target's binaries natively (x86_64 Linux runs the
    /// x86_64 glibc and the static musl binaries).
    pub fn runs_here(&self, host: &str) -> bool {
        self.cpu() == cpu_of(host)
    }

    /// Whether pip on this machine installs the target's wheel (same CPU, same C library).
    pub fn installs_here(&self, host: &str) -> bool {
        self.runs_here(host) && (self.libc == Libc::Musl) == host.ends_with("musl")
    }
}

#[cfg(test)]
mod tests {
    use super::{ALL, Libc, Target};

    #[test]
    fn every_target_has_its_own_npm_package_and_a_known_policy() {
        let mut names: Vec<String> = ALL.iter().map(Target::npm_platform).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        for target in ALL {
            let policy_libc =
                if target.wheel_policy.starts_with("musllinux") { Libc::Musl } else { Libc::Glibc };
            assert_eq!(policy_libc, target.libc, "{}", target.triple);
            assert_eq!(Target::named(target.triple), Ok(target));
        }
        assert!(Target::named("x86_64-pc-windows-msvc").is_err());
    }

    #[test]
    fn an_x86_64_glibc_host_runs_both_x86_64_builds_and_installs_the_glibc_wheel() {
        let host = "x86_64-unknown-linux-gnu";
        let runs: Vec<&str> = ALL.iter().filter(|t| t.runs_here(host)).map(|t| t.triple).collect();
        assert_eq!(runs, ["x86_64-unknown-linux-gnu", "x86_64-unknown-linux-musl"]);
        let installs: Vec<&str> = ALL.iter().filter(|t| t.installs_here(host)).map(|t| t.triple).collect();
        assert_eq!(installs, ["x86_64-unknown-linux-gnu"]);
    }
}
