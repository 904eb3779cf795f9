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

/// Loopback sockets closed lately (TIME_WAIT, `/proc/net/tcp` and `tcp6`); `None` elsewhere.
fn time_wait() -> Option<usize> {
    let mut count = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).ok()?;
        count += text.lines().skip(1).filter(|l| l.split_whitespace().nth(3) == Some("06")).count();
    }
    Some(count)
}

/// Returns once fewer than 2,000 closed connections still hold their ports (a cell of thousands
/// of streams leaves as many in TIME_WAIT for a minute, and the next cell's connections would
/// find the ephemeral ports taken), or after 120 s (said on stderr).
pub async fn ports_free() {
    let started = Instant::now();
    while let Some(waiting) = time_wait() {
        if waiting < 2_000 {
            return;
        }
        if started.elapsed() > Duration::from_secs(120) {
            eprintln!("{waiting} ports still in TIME_WAIT after 120 s; measuring anyway");
            return;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
