//! The guard's own cost per guarded tool call, for `cargo xtask bench bindings` (beside the same
//! loop through the Python and the Node bindings): a reply with one call, the call checked before
//! it runs and its result read, over distinct calls (the detectors read each; none fires).
//!
//! `cargo run --release -p looprail-embed --example guarded_calls -- 100000` prints the mean
//! nanoseconds per guarded call.

use std::time::Instant;

use looprail::LooprailConfig;
use looprail::core::profile::Profile;
use looprail_embed::{AgentGuard, Call, Reply};

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let config = LooprailConfig::for_profile(Profile::CodingAgent);
    let mut guard = AgentGuard::new(&config);
    let started = Instant::now();
    for i in 0..n {
        if i % 1000 == 0 {
            // A fresh conversation every 1,000 calls, as the other loops do.
            guard = AgentGuard::new(&config);
            guard.user_message(None);
        }
        let now = i64::try_from(i).unwrap_or(i64::MAX);
        let call = Call {
            id: format!("c{i}"),
            name: "read_file".into(),
            arguments: format!(r#"{{"path":"src/m{i}.rs"}}"#),
        };
        guard.before_model(now);
        guard.model_response(&Reply { calls: vec![call.clone()], ..Reply::default() }, now);
        guard.before_tool(&call);
        guard.after_tool(&call.id, &format!("contents of module {i}"), false);
    }
    let per_call = started.elapsed().as_nanos() as f64 / n as f64;
    println!("{per_call:.0}");
}
