//! Waiting for an idle machine before a measurement: a system's leftover work (a proxy still
//! logging or working off a backlog after its load stopped) must not fall on the next one's
//! figures.

use std::time::{Duration, Instant};

/// The share of the machine's CPU time idle (idle and iowait) at which it counts as quiet.
const QUIET: f64 = 0.85;

/// The machine's idle and total CPU ticks so far (Linux `/proc/stat`; `None` elsewhere).
fn ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal ...
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    Some((idle, fields.iter().sum()))
}

/// Returns once the machine has been at least [`QUIET`] idle for a quarter second, or after
/// 30 s (said on stderr).
pub async fn quiet() {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        let Some((idle_before, total_before)) = ticks() else { return };
        tokio::time::sleep(Duration::from_millis(250)).await;
        let Some((idle, total)) = ticks() else { return };
        let elapsed = total.saturating_sub(total_before).max(1) as f64;
        if idle.saturating_sub(idle_before) as f64 / elapsed >= QUIET {
            return;
        }
    }
    eprintln!("the machine is still busy after 30 s; measuring anyway");
}
