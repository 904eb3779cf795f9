//! Helpers for the binary's tests: temporary work directories, running `looprail` with keys
//! set, the usual `run` arguments against a fake server, and scripted OpenAI replies.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use looprail_providers::fake::{FakeServer, Reply};

/// A fresh directory holding `work/notes.txt` and, outside `work`, `secret.txt`; removed with
/// everything in it when this is dropped (a test leaves nothing behind).
#[derive(Debug)]
pub struct TempDir(tempfile::TempDir);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

pub fn temp_dir(name: &str) -> TempDir {
    let dir = TempDir(tempfile::Builder::new().prefix(&format!("looprail-cli-{name}-")).tempdir().unwrap());
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::write(dir.join("work/notes.txt"), "the meeting moved to Thursday").unwrap();
    std::fs::write(dir.join("secret.txt"), "do not leak").unwrap();
    dir
}

/// `looprail` with an Anthropic key set and the OpenAI key unset.
pub async fn looprail(args: Vec<String>) -> Output {
    looprail_with_openai_key(args, None).await
}

/// `looprail` with an OpenAI key set too (the fake server accepts any).
pub async fn looprail_keyed(args: Vec<String>) -> Output {
    looprail_with_openai_key(args, Some("sk-test")).await
}

pub async fn looprail_with_openai_key(args: Vec<String>, openai_key: Option<&'static str>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_looprail"));
        command.args(&args).env("ANTHROPIC_API_KEY", "sk-ant-test");
        match openai_key {
            Some(key) => command.env("OPENAI_API_KEY", key),
            None => command.env_remove("OPENAI_API_KEY"),
        };
        command.output().unwrap()
    })
    .await
    .unwrap()
}

pub fn openai_args(server: &FakeServer, dir: &std::path::Path, extra: &[String], task: &str) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "run".into(),
        "--provider".into(),
        "openai".into(),
        "--model".into(),
        "gpt-4o-mini".into(),
        "--base-url".into(),
        format!("{}/v1", server.url),
        "--no-stream".into(),
        "--store".into(),
        dir.join("runs.db").display().to_string(),
        "--workdir".into(),
        dir.join("work").display().to_string(),
    ];
    args.extend_from_slice(extra);
    args.push(task.into());
    args
}

pub fn json_call(id: &str, name: &str, args: &str) -> Reply {
    Reply::json(200, &serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": args}}]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).to_string())
}

pub fn json_text(text: &str) -> Reply {
    Reply::json(200, &serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}).to_string())
}

/// A streamed Chat Completions answer of `text`.
pub fn sse_text(text: &str) -> Reply {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]});
    Reply::sse_events(&[&format!("data: {chunk}\n\n"), "data: [DONE]\n\n"])
}

/// A streamed Chat Completions answer calling tool `name` with `args`.
pub fn sse_call(id: &str, name: &str, args: &str) -> Reply {
    let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": args}}]}, "finish_reason": "tool_calls"}]});
    Reply::sse_events(&[&format!("data: {chunk}\n\n"), "data: [DONE]\n\n"])
}
