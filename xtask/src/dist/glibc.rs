//! The glibc symbol versions a binary needs, read from its ELF version-requirement section
//! (`.gnu.version_r`), not taken from the wheel's tag: a wheel tagged manylinux2014 whose
//! binary needs `GLIBC_2.34` installs on an old system and then fails to start there.

use std::path::Path;

use object::Endianness;
use object::elf::FileHeader64;
use object::read::elf::{FileHeader, SectionTable};

/// Every `GLIBC_x.y` version the ELF binary `data` requires, as (x, y), sorted, no repeats.
pub fn required_versions(data: &[u8]) -> Result<Vec<(u32, u32)>, String> {
    let header =
        FileHeader64::<Endianness>::parse(data).map_err(|e| format!("not a 64-bit ELF file: {e}"))?;
    let endian = header.endian().map_err(|e| e.to_string())?;
    if endian != Endianness::Little {
        return Err("a big-endian binary: no package target is".to_owned());
    }
    let sections: SectionTable<'_, FileHeader64<Endianness>> =
        header.sections(endian, data).map_err(|e| format!("ELF section table: {e}"))?;
    let Some((mut needs, link)) = sections.gnu_verneed(endian, data).map_err(|e| e.to_string())? else {
        // A static binary (musl) needs no versioned symbol at all.
        return Ok(Vec::new());
    };
    let strings = sections.strings(endian, data, link).map_err(|e| e.to_string())?;
    let mut versions = Vec::new();
    while let Some((_, mut auxiliaries)) = needs.next().map_err(|e| e.to_string())? {
        while let Some(auxiliary) = auxiliaries.next().map_err(|e| e.to_string())? {
            let name = auxiliary.name(endian, strings).map_err(|e| e.to_string())?;
            if let Some(version) = glibc_version(&String::from_utf8_lossy(name)) {
                versions.push(version);
            }
        }
    }
    versions.sort_unstable();
    versions.dedup();
    Ok(versions)
}

/// `GLIBC_2.17` → (2, 17); `GLIBC_2.3.4` → (2, 3); anything else → None.
fn glibc_version(name: &str) -> Option<(u32, u32)> {
    let mut parts = name.strip_prefix("GLIBC_")?.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    Some((major, minor))
}

/// An error naming the newest glibc version the binary at `path` needs when it is newer
/// than `floor`.
pub fn check_floor(path: &Path, floor: (u32, u32)) -> Result<(), String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let versions = required_versions(&data).map_err(|e| format!("{}: {e}", path.display()))?;
    match versions.last() {
        Some(&newest) if newest > floor => Err(format!(
            "{} needs GLIBC_{}.{}, newer than GLIBC_{}.{}: it would not start on the systems its wheel's tag promises",
            path.display(),
            newest.0,
            newest.1,
            floor.0,
            floor.1
        )),
        Some(&newest) => {
            println!("glibc: {} needs at most GLIBC_{}.{}", path.display(), newest.0, newest.1);
            Ok(())
        }
        None => {
            println!("glibc: {} needs no versioned glibc symbol", path.display());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{glibc_version, required_versions};

    #[test]
    fn version_names_parse_and_others_are_ignored() {
        assert_eq!(glibc_version("GLIBC_2.17"), Some((2, 17)));
        assert_eq!(glibc_version("GLIBC_2.3.4"), Some((2, 3)));
        assert_eq!(glibc_version("GLIBC_PRIVATE"), None);
        assert_eq!(glibc_version("GCC_3.0"), None);
    }

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn this_test_binary_is_read_and_needs_a_glibc_version() {
        // The test binary itself, linked against this machine's glibc: at least one
        // versioned glibc symbol (memcpy, pthread_*), never an unreadable section.
        let me = std::env::current_exe().unwrap();
        let versions = required_versions(&std::fs::read(me).unwrap()).unwrap();
        assert!(versions.iter().all(|&(major, _)| major == 2), "{versions:?}");
        assert!(!versions.is_empty());
    }

    #[test]
    fn a_file_that_is_not_elf_is_an_error() {
        assert!(required_versions(b"#!/bin/sh\necho hi\n").is_err());
    }
}
