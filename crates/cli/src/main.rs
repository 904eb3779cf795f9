//! The `looprail` command.
//!
//! `looprail demo` runs scripted scenarios through the loop engine on embedded defaults (no
//! API key, no server) and exits 0 only if every scenario behaved as expected. The `audit` and
//! `run` commands are tracked by issue 9.

mod demo;
mod progress;

use std::process::ExitCode;

const USAGE: &str = "usage: looprail demo [--quiet]\n\n\
  demo     run the built-in scenarios on embedded defaults and check their outcomes\n\
  --quiet  print only the summary table\n";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("demo") => {
            let quiet = match args.get(1).map(String::as_str) {
                None => false,
                Some("--quiet") => true,
                Some(other) => {
                    eprintln!("error: unknown option `{other}` for demo\n\n{USAGE}");
                    return ExitCode::from(2);
                }
            };
            demo::run(quiet)
        }
        Some("-h" | "--help") | None => {
            print!("{USAGE}");
            if args.is_empty() { ExitCode::from(2) } else { ExitCode::SUCCESS }
        }
        Some(other) => {
            eprintln!("error: unknown command `{other}`; run `looprail --help` for the list");
            ExitCode::from(2)
        }
    }
}
