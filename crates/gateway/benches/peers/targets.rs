//! The targets, checked on the rows of one run: each a line with its figures and
//! whether it passed (a peer that could not be measured fails the comparison with it).

use crate::agent::AgentRow;
use crate::report::{Load, Row};

fn find<'a>(rows: &'a [Row], system: &str, api: &str, stream: bool, load: Load) -> Option<&'a Row> {
    rows.iter().find(|r| {
        r.system == system && r.api == api && r.stream == stream && r.load == load && r.unavailable.is_none()
    })
}

fn line(failed: &mut usize, name: String, figures: Option<(String, bool)>) {
    let (text, pass) = figures.unwrap_or_else(|| ("not measured".into(), false));
    *failed += usize::from(!pass);
    println!("{name:<62} {text:<34} {}", if pass { "pass" } else { "FAIL" });
}

/// Prints each target with its figures; returns how many were missed.
pub fn check(rows: &[Row], max_clients: usize) -> usize {
    println!("\ntargets (this machine, this run)");
    let mut failed = 0;
    for api in ["openai", "anthropic"] {
        let looprail = |stream, load| find(rows, "looprail", api, stream, load);
        let p99_100 = |system, stream| {
            find(rows, system, api, stream, Load::Open(100.0)).and_then(|r| r.added).map(|a| a.p99)
        };
        for stream in [false, true] {
            let figures =
                p99_100("looprail", stream).zip(p99_100("litellm", stream)).map(|(ours, theirs)| {
                    (format!("{ours:.3} vs {theirs:.3} ms"), ours.max(0.0) * 10.0 <= theirs)
                });
            line(
                &mut failed,
                format!("{api} stream={stream}: added p99 at 100/s >= 10x below LiteLLM"),
                figures,
            );
        }
        let p50_1 =
            |system| find(rows, system, api, false, Load::Sequential).and_then(|r| r.added).map(|a| a.p50);
        let figures = p50_1("looprail")
            .zip(p50_1("nginx"))
            .map(|(ours, theirs)| (format!("{ours:.3} vs {theirs:.3} ms"), ours - theirs <= 0.2));
        line(&mut failed, format!("{api}: added p50 at 1 client within 0.2 ms of nginx"), figures);
        let figures = looprail(false, Load::Max(max_clients)).map(|r| {
            (
                format!("{:.0}/s, {} errors", r.achieved_rps, r.errors),
                r.achieved_rps >= 3_000.0 && r.errors == 0,
            )
        });
        line(&mut failed, format!("{api}: sustains >= 3,000/s with no error"), figures);
        let figures = looprail(false, Load::Open(1_000.0))
            .and_then(|r| r.added.map(|a| (a.p99, r.errors)))
            .map(|(p99, errors)| (format!("{p99:.3} ms, {errors} errors"), p99 <= 1.0 && errors == 0));
        line(&mut failed, format!("{api}: added p99 at 1,000/s <= 1 ms"), figures);
        let figures = looprail(true, Load::Sequential)
            .and_then(|r| r.added_first)
            .map(|a| (format!("{:.3} ms", a.p50), a.p50 <= 0.3));
        line(
            &mut failed,
            format!("{api}: streamed, added time to first byte p50 at 1 client <= 0.3 ms"),
            figures,
        );
    }
    failed
}

/// The agent-traffic targets; returns how many were missed.
pub fn check_agent(rows: &[AgentRow]) -> usize {
    println!("\nagent-traffic targets (this machine, this run; the upstream over HTTPS)");
    let mut failed = 0;
    let find = |cell: &str, system: &str| rows.iter().find(|r| r.cell == cell && r.system == system);
    let ours = find("body 150 KB", "looprail").and_then(|r| r.added);
    let figures = ours.map(|(p50, p99)| (format!("{p50:.3} / {p99:.3} ms"), p50 <= 0.5 && p99 <= 2.0));
    line(&mut failed, "150 KB unnamed, 1 client: added p50 <= 0.5 ms, p99 <= 2 ms".into(), figures);
    let theirs = find("body 150 KB", "litellm").and_then(|r| r.added);
    let figures = ours.zip(theirs).map(|((_, p99), (_, litellm))| {
        (format!("{p99:.3} vs {litellm:.3} ms"), p99.max(0.0) * 10.0 <= litellm)
    });
    line(&mut failed, "150 KB unnamed, 1 client: added p99 >= 10x below LiteLLM".into(), figures);
    let figures = find("slow streams 10000", "looprail").map(|r| {
        let mb = r.peak_rss_mb.unwrap_or(f64::MAX);
        (format!("{} errors, {mb:.0} MB", r.errors), r.errors == 0 && mb <= 1_024.0)
    });
    line(&mut failed, "10,000 slow streams at once: 0 errors, peak RSS <= 1 GB".into(), figures);
    failed
}
