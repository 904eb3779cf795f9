//! The gateway through the official `openai` (Chat Completions and Responses), `anthropic` and
//! `openai-agents` (the OpenAI Agents SDK) Python packages and a LangGraph ReAct agent on
//! LangChain's ChatOpenAI (issue 19): small
//! tool-using agents (tests/clients/*.py) run against a gateway in this process, in front of
//! a local fake upstream whose model repeats the same tool call forever unless its tools are
//! taken away. The SDKs are installed from the package registry into a virtual environment
//! under the target directory on first use (`python3 -m venv`, then `pip install -r
//! tests/clients/requirements.txt`: every package pinned, see tests/clients/README.md);
//! without python3 the tests skip on a developer's machine and fail under CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;

use looprail_gateway::Api;
use looprail_loop_core::config::LoopConfig;
use serde_json::Value;

/// The venv with the pinned SDKs (common/python.rs).
fn python() -> Option<PathBuf> {
    common::python::venv()
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients").join(name)
}

use crate::common;
use common::TempStore;
use common::sdk::{assert_ended, assert_ladder_concluded, gateway, may_call_tools, upstream};

fn temp_store(name: &str) -> TempStore {
    TempStore::new(name)
}

/// Runs an agent script to its end; returns its JSON line.
async fn agent(python: &Path, script_name: &str, base: &str, task: &str, extra: &[&str]) -> Value {
    let mut args =
        vec![script(script_name).display().to_string(), base.to_owned(), task.to_owned(), "40".to_owned()];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let python = python.to_owned();
    let out = tokio::task::spawn_blocking(move || Command::new(python).args(&args).output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "agent failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_agent_on_either_sdk_gets_a_final_answer_streamed_or_not() {
    let Some(python) = python() else { return };
    for (script_name, api, base_suffix, flags) in [
        ("agent_openai.py", Api::OpenAi, "/v1", &[][..]),
        ("agent_anthropic.py", Api::Anthropic, "", &[]),
        ("agent_responses.py", Api::Responses, "/v1", &[]),
        ("agent_agents_sdk.py", Api::Responses, "/v1", &[]),
        ("agent_langgraph.py", Api::OpenAi, "/v1", &[]),
        ("agent_langgraph.py", Api::Responses, "/v1", &["responses"]),
    ] {
        for stream in [false, true] {
            let (upstream, _) = upstream(api, false).await;
            let store = temp_store("loop");
            let gw = gateway(&store, &upstream.url, LoopConfig::default(), 0).await;
            let task = format!("find the report ({script_name} {flags:?}, stream {stream})");
            let mut extra = flags.to_vec();
            if stream {
                extra.push("stream");
            }
            let result =
                agent(&python, script_name, &format!("{}{base_suffix}", gw.url), &task, &extra).await;
            assert_ended(&result, &task);
            let seen = upstream.requests();
            assert_ladder_concluded(&seen);
            let last = &seen.last().unwrap().body;
            assert!(last.get("tools").is_some(), "the tools stay declared (Anthropic requires them)");
            let relayed = seen.iter().filter(|r| r.body["stream"] == true).count();
            assert_eq!(relayed > 0, stream, "streamed turns were relayed from a streaming upstream");
            gw.stop().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_agent_continuing_by_response_id_gets_a_final_answer() {
    // The SDK's `previous_response_id` style: the gateway keeps each response's items and
    // sends the upstream the whole conversation, so its guards see the loop.
    let Some(python) = python() else { return };
    for stream in [false, true] {
        let (upstream, _) = upstream(Api::Responses, false).await;
        let store = temp_store("chained");
        let gw = gateway(&store, &upstream.url, LoopConfig::default(), 0).await;
        let task = format!("find the report (chained, stream {stream})");
        let extra: &[&str] = if stream { &["stream", "chained"] } else { &["chained"] };
        let result = agent(&python, "agent_responses.py", &format!("{}/v1", gw.url), &task, extra).await;
        assert_ended(&result, &task);
        let seen = upstream.requests();
        assert!(
            seen.iter().all(|r| r.body.get("previous_response_id").is_none()),
            "the upstream got it whole"
        );
        let last = &seen.last().unwrap().body;
        assert!(last["input"].as_array().unwrap().len() > 3, "the whole conversation: {last}");
        assert!(!may_call_tools(last), "the final answer was asked for with no tool to call");
        gw.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_budget_ends_the_loop_with_no_further_tool_turns() {
    let Some(python) = python() else { return };
    let (upstream, _) = upstream(Api::OpenAi, false).await;
    let mut config = LoopConfig::default();
    config.budget.tool_call_budget = Some(3);
    let store = temp_store("budget");
    let gw = gateway(&store, &upstream.url, config, 0).await;
    let result = agent(&python, "agent_openai.py", &format!("{}/v1", gw.url), "count things", &[]).await;
    assert_ended(&result, "count things");
    assert_eq!(result["steps"], 4, "three tool turns, then the final answer: {result}");
    let with_tools = upstream.requests().iter().filter(|r| may_call_tools(&r.body)).count();
    assert_eq!(with_tools, 3);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cost_limit_ends_the_loop_with_the_final_answer() {
    let Some(python) = python() else { return };
    // Non-streamed, and streamed as Anthropic streams report usage (an OpenAI chat stream does
    // only when the client asks for it).
    for (script_name, api, model, base_suffix, stream) in [
        ("agent_openai.py", Api::OpenAi, "gpt-4o-mini", "/v1", false),
        ("agent_anthropic.py", Api::Anthropic, "claude-sonnet-4-5", "", true),
    ] {
        let (upstream, _) = upstream(api, false).await;
        let mut config = LoopConfig::default();
        // Each turn of the fake model is 100 tokens in and 10 out: 0.1 + 0.1 at these prices.
        let price = looprail_loop_core::price::ModelPrice {
            input_per_mtok: 1000.0,
            output_per_mtok: 10_000.0,
            ..Default::default()
        };
        config.prices = config.prices.with(model, price);
        config.budget.cost_limit = Some(0.5);
        let store = temp_store("cost");
        let gw = gateway(&store, &upstream.url, config, 0).await;
        let extra: &[&str] = if stream { &["stream"] } else { &[] };
        let base = format!("{}{base_suffix}", gw.url);
        let result = agent(&python, script_name, &base, "price things", extra).await;
        assert_ended(&result, "price things");
        // 0.2, 0.4, 0.6 spent after three turns: the fourth is the final answer.
        assert_eq!(result["steps"], 4, "{script_name}: three tool turns, then the final answer: {result}");
        let with_tools = upstream.requests().iter().filter(|r| may_call_tools(&r.body)).count();
        assert_eq!(with_tools, 3, "{script_name}");
        gw.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_429_is_retried_and_concurrent_conversations_stay_apart() {
    let Some(python) = python() else { return };
    let (upstream, calls) = upstream(Api::OpenAi, true).await;
    let mut config = LoopConfig::default();
    config.budget.tool_call_budget = Some(2);
    let store = temp_store("apart");
    let gw = gateway(&store, &upstream.url, config, 0).await;
    let base = format!("{}/v1", gw.url);
    let (a, b) = tokio::join!(
        agent(&python, "agent_openai.py", &base, "task A", &[]),
        agent(&python, "agent_openai.py", &base, "task B", &["stream"]),
    );
    assert_ended(&a, "task A");
    assert_ended(&b, "task B");
    assert_eq!((a["steps"].as_u64(), b["steps"].as_u64()), (Some(3), Some(3)), "each has its own budget");
    assert_ne!(a["run"], b["run"], "two conversations");
    assert_eq!(calls.load(Ordering::SeqCst), 7, "six answers and the one 429 the gateway retried");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_restart_mid_conversation_continues_its_ladder() {
    let Some(python) = python() else { return };
    // The reference: how many steps the ladder takes without a restart.
    let (upstream, _) = upstream(Api::OpenAi, false).await;
    let store = temp_store("reference");
    let gw = gateway(&store, &upstream.url, LoopConfig::default(), 0).await;
    let reference = agent(&python, "agent_openai.py", &format!("{}/v1", gw.url), "the long task", &[]).await;
    gw.stop().await;

    let store = temp_store("restart");
    let gw = gateway(&store, &upstream.url, LoopConfig::default(), 0).await;
    let port: u16 = gw.url.rsplit(':').next().unwrap().parse().unwrap();
    let base = format!("{}/v1", gw.url);
    let mut child = Command::new(python)
        .args([
            script("agent_openai.py").display().to_string(),
            base,
            "the long task".into(),
            "40".into(),
            "pause=3".into(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
        (line, stdout)
    })
    .await
    .unwrap();
    assert_eq!(line.0.trim(), "PAUSED");
    gw.stop().await; // the gateway goes away mid-conversation...
    let gw = gateway(&store, &upstream.url, LoopConfig::default(), port).await; // ...and comes back
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"go on\n").unwrap();
    let (mut rest, mut stdout) = (String::new(), line.1);
    let out = tokio::task::spawn_blocking(move || {
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        (child.wait().unwrap(), rest)
    })
    .await
    .unwrap();
    assert!(out.0.success(), "{}", out.1);
    let result: Value = serde_json::from_str(out.1.lines().last().unwrap()).unwrap();
    assert_ended(&result, "the long task");
    assert_eq!(result["steps"], reference["steps"], "the ladder went on where it was, not from the start");
    gw.stop().await;
}

/// The gateway's cut of a reply repeating itself (issue 35) reads, through each SDK's own
/// stream accumulator, like any reply an API cut at its output limit: no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chanting_reply_cut_by_the_gateway_reads_without_an_error() {
    let Some(python) = python() else { return };
    for (api, name, suffix) in
        [(Api::OpenAi, "chat", "/v1"), (Api::Anthropic, "messages", ""), (Api::Responses, "responses", "/v1")]
    {
        let upstream = common::chant::chanting_upstream(api).await;
        let store = temp_store("chant");
        let gw = gateway(&store, &upstream.url, LoopConfig::default(), 0).await;
        let args = vec![
            script("read_stream.py").display().to_string(),
            name.to_owned(),
            format!("{}{suffix}", gw.url),
        ];
        let python = python.clone();
        let out = tokio::task::spawn_blocking(move || Command::new(python).args(&args).output().unwrap())
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        common::chant::assert_cut(
            api,
            &serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap(),
        );
        gw.stop().await;
    }
}
