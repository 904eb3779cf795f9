//! The gateway through the official Node SDKs: `openai` (Chat Completions), `@anthropic-ai/sdk`
//! (Messages) and the Vercel AI SDK (`ai` with `@ai-sdk/openai`, whose default model API is
//! Responses, and `@ai-sdk/anthropic`), each driving a small tool-using agent
//! (tests/clients/node/*.mjs), and through the Codex CLI (`codex exec`) and Claude Code
//! (`claude -p`), against a gateway in this process, in front of a fake upstream whose model repeats the same tool call forever
//! unless its tools are taken away. The SDKs are installed from the npm registry, at the
//! versions tests/clients/node/package-lock.json pins, under the target directory on first use
//! (`npm ci`); without node and npm the tests skip on a developer's machine and fail under CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use looprail_gateway::Api;
use looprail_loop_core::config::LoopConfig;
use serde_json::Value;

use crate::common;
use common::TempStore;
use common::node::clients;
use common::sdk::{assert_ended, assert_ladder_concluded, gateway, upstream};

/// Runs an agent to its end; returns its JSON line.
async fn agent(dir: &Path, script: &str, base: &str, task: &str, stream: bool, extra: &[&str]) -> Value {
    let mut args = vec![script.to_owned(), base.to_owned(), task.to_owned(), "40".to_owned()];
    if stream {
        args.push("stream".to_owned());
    }
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let dir = dir.to_owned();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("node").args(&args).current_dir(dir).output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script} failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
}

/// Runs the installed CLI `name` with `args` in a fresh working directory, with a fresh
/// configuration directory under each of `home_vars` and `env` set; returns its stdout once it
/// has succeeded. Neither CLI ends a loop by itself within the test's bound: should the gateway
/// never end it, the run is stopped after two minutes and the test fails instead of hanging.
async fn run_cli<'a>(
    dir: &Path,
    name: &str,
    args: impl IntoIterator<Item = &'a str>,
    home_vars: &[&str],
    env: Vec<(&str, String)>,
) -> String {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut command = Command::new("timeout");
    command.arg("120").arg(dir.join("node_modules/.bin").join(name)).args(args);
    for var in home_vars {
        command.env(var, home.path());
    }
    command.envs(env).current_dir(work.path()).stdin(std::process::Stdio::null());
    let out = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{name} failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_agent_on_each_node_sdk_gets_a_final_answer_streamed_or_not() {
    let Some(dir) = clients() else { return };
    for (script, api, base_suffix, extra) in [
        ("agent_openai.mjs", Api::OpenAi, "/v1", None),
        ("agent_anthropic.mjs", Api::Anthropic, "", None),
        ("agent_ai_sdk.mjs", Api::Responses, "/v1", None),
        ("agent_ai_sdk.mjs", Api::OpenAi, "/v1", Some("chat")),
        // The AI SDK's Anthropic provider puts the version in the base URL it is given.
        ("agent_ai_sdk.mjs", Api::Anthropic, "/v1", Some("anthropic")),
    ] {
        for stream in [false, true] {
            let (upstream, _) = upstream(api, false).await;
            let store = TempStore::new("node");
            let gw = gateway(&store, &upstream.url, LoopConfig::default(), 0).await;
            let task = format!("find the report ({script} {extra:?}, stream {stream})");
            let extra: Vec<&str> = extra.into_iter().collect();
            let result =
                agent(&dir, script, &format!("{}{base_suffix}", gw.url), &task, stream, &extra).await;
            assert_ended(&result, &task);
            let seen = upstream.requests();
            assert_ladder_concluded(&seen);
            let relayed = seen.iter().filter(|r| r.body["stream"] == true).count();
            assert_eq!(relayed > 0, stream, "streamed turns were relayed from a streaming upstream");
            gw.stop().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_codex_cli_looping_on_a_call_gets_a_final_answer() {
    // Codex streams the Responses API with `store: false`, sends its whole input each turn
    // (reasoning items with their encrypted content) and answers a call to a tool it does not
    // have with an error output: the loop the ladder must end.
    let Some(dir) = clients() else { return };
    let (upstream, _) = upstream(Api::Responses, false).await;
    let store = TempStore::new("codex");
    let gw = gateway(&store, &upstream.url, LoopConfig::default(), 0).await;
    let provider = format!(
        "model_providers.looprail={{ name = \"looprail\", base_url = \"{}/v1\", env_key = \"OPENAI_API_KEY\", wire_api = \"responses\" }}",
        gw.url
    );
    let args = [
        "exec",
        "--skip-git-repo-check",
        "--json",
        "-c",
        &provider,
        "-c",
        "model_provider=\"looprail\"",
        "-m",
        "gpt-4o-mini",
        "find the report",
    ];
    let env = vec![("OPENAI_API_KEY", "sk-client".to_owned())];
    let stdout = run_cli(&dir, "codex", args, &["CODEX_HOME"], env).await;
    let events: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let said =
        events.iter().filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message");
    let said: Vec<&str> = said.filter_map(|e| e["item"]["text"].as_str()).collect();
    assert!(said.iter().any(|t| t.starts_with("final answer for:")), "codex got the final answer: {stdout}");
    let seen = upstream.requests();
    assert!(seen.iter().all(|r| r.body["store"] == false), "codex keeps nothing upstream");
    assert_ladder_concluded(&seen);
    assert!(seen.len() < 20, "the ladder ended the loop within its bound: {} requests", seen.len());
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_looping_on_a_call_gets_a_final_answer() {
    // Claude Code streams the Messages API with its own system messages among the messages,
    // thinking and context-management settings, and answers a call to a tool it does not have
    // with an error result: the loop the ladder must end.
    let Some(dir) = clients() else { return };
    let (upstream, _) = upstream(Api::Anthropic, false).await;
    let store = TempStore::new("claude");
    let gw = gateway(&store, &upstream.url, LoopConfig::default(), 0).await;
    let args = ["-p", "find the report", "--output-format", "json", "--max-turns", "40"];
    let env = vec![
        ("ANTHROPIC_BASE_URL", gw.url.clone()),
        ("ANTHROPIC_API_KEY", "sk-ant-client".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
    ];
    let stdout = run_cli(&dir, "claude", args, &["HOME", "CLAUDE_CONFIG_DIR"], env).await;
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(result["is_error"], false, "{result}");
    assert!(result["result"].as_str().unwrap_or_default().starts_with("final answer for:"), "{result}");
    let seen = upstream.requests();
    assert_ladder_concluded(&seen);
    assert!(seen.len() < 20, "the ladder ended the loop within its bound: {} requests", seen.len());
    gw.stop().await;
}

/// The gateway's cut of a reply repeating itself (issue 35) reads, through each Node SDK's
/// stream helper, like any reply an API cut at its output limit: no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chanting_reply_cut_by_the_gateway_reads_without_an_error() {
    let Some(dir) = clients() else { return };
    for (api, name, suffix) in
        [(Api::OpenAi, "chat", "/v1"), (Api::Anthropic, "messages", ""), (Api::Responses, "responses", "/v1")]
    {
        let upstream = common::chant::chanting_upstream(api).await;
        let store = TempStore::new("chant");
        let gw = gateway(&store, &upstream.url, LoopConfig::default(), 0).await;
        let args = ["read_stream.mjs".to_owned(), name.to_owned(), format!("{}{suffix}", gw.url)];
        let cwd = dir.clone();
        let out = tokio::task::spawn_blocking(move || {
            Command::new("node").args(args).current_dir(cwd).output().unwrap()
        })
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
