//! Cost per observed tool call for the default guardrail stack (issue 5): 200-byte arguments,
//! 2 KB results, after 100 and after 10,000 earlier calls. Target: at most 2 µs per call, and no
//! growth with run length (windows, not scans of the history).

// A benchmark aborts loudly on a broken setup.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use divan::Bencher;
use looprail_guardrails::{GuardrailsConfig, default_stack};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::guard::{Counters, TurnView};
use looprail_loop_core::message::{ToolCall, ToolResult};

fn main() {
    divan::main();
}

fn call(i: usize) -> (ToolCall, ToolResult) {
    // About 200 bytes of arguments; 40 distinct calls so windows see repeats now and then.
    let args = format!(
        r#"{{"path": "src/module_{:02}/handlers/request_processing.rs", "pattern": "fn handle_request", "context_lines": 3, "case_sensitive": false, "max_results": 50}}"#,
        i % 40
    );
    let id = format!("call_{i}");
    let mut output = String::with_capacity(2048);
    while output.len() < 2000 {
        output.push_str(&format!(
            "src/module_{:02}/handlers/request_processing.rs:{}: fn handle_request(&self) -> Result<()>\n",
            i % 40,
            i + output.len()
        ));
    }
    (ToolCall::new(&id, "search_code", args), ToolResult::ok(&id, output))
}

#[divan::bench(args = [100, 10_000], sample_count = 50, sample_size = 200)]
fn default_stack_per_call(bencher: Bencher, prior_calls: usize) {
    let config = LoopConfig::default();
    let counters = Counters::default();
    let view = TurnView { counters: &counters, messages: &[], config: &config, elapsed: Default::default() };
    let mut guards = default_stack(&GuardrailsConfig::default());
    for i in 0..prior_calls {
        let (c, r) = call(i);
        for g in &mut guards {
            g.after_tools(&view, std::slice::from_ref(&c), std::slice::from_ref(&r));
        }
    }
    let inputs: Vec<(ToolCall, ToolResult)> = (0..64).map(|i| call(prior_calls + i)).collect();
    let mut n = 0usize;
    bencher.bench_local(|| {
        let (c, r) = &inputs[n % inputs.len()];
        n += 1;
        let mut decisions = 0;
        for g in &mut guards {
            decisions += g.after_tools(&view, std::slice::from_ref(c), std::slice::from_ref(r)).len();
        }
        divan::black_box(decisions)
    });
}

/// The two per-call costs inside the stack, measured apart.
#[divan::bench]
fn signature_of_200_byte_arguments(bencher: Bencher) {
    let (c, _) = call(7);
    bencher.bench(|| {
        looprail_guardrails::signature::CallSignature::of(
            divan::black_box(&c.name),
            divan::black_box(&c.arguments),
        )
    });
}

#[divan::bench]
fn fingerprint_of_2_kb_result(bencher: Bencher) {
    let (_, r) = call(7);
    bencher.bench(|| looprail_guardrails::signature::observation_fingerprint(divan::black_box(&r.content)));
}

#[divan::bench]
fn fingerprint_and_lines_of_2_kb_result(bencher: Bencher) {
    let (_, r) = call(7);
    bencher.bench(|| looprail_guardrails::signature::observe_output(divan::black_box(&r.content)));
}

#[divan::bench]
fn waiting_call_check(bencher: Bencher) {
    let (c, _) = call(7);
    bencher.bench(|| {
        looprail_guardrails::is_waiting_call(divan::black_box(&c.name), divan::black_box(&c.arguments))
    });
}
