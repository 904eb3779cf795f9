//! looprail inside the real Gemini CLI (issue 38): `looprail hook install gemini-cli --user`
//! writes the hooks into the user's settings, and `gemini -p` (the pinned npm release) runs
//! against a local fake Gemini API (`GOOGLE_GEMINI_BASE_URL`). A model that repeats one shell
//! command is told (the remark appended to the tool's result), denied, asked about and stopped;
//! a healthy session of 100 distinct calls is never touched.

use super::node;

use std::path::Path;
use std::process::Command;

use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

/// Function responses in a request's history.
fn responses(body: &Value) -> usize {
    let parts =
        body["contents"].as_array().into_iter().flatten().flat_map(|c| c["parts"].as_array()).flatten();
    parts.filter(|p| p.get("functionResponse").is_some()).count()
}

/// A fake Gemini API: the main loop (requests declaring tools, streamed) gets `next(responses so
/// far)`'s shell command, or with `None` a final text; other requests (the CLI's model router)
/// a short text.
async fn model(next: impl Fn(usize) -> Option<String> + Send + Sync + 'static) -> FakeServer {
    FakeServer::responding(move |body| {
        let n = responses(body);
        let main = body.get("tools").is_some_and(|t| !t.is_null());
        let part = match next(n).filter(|_| main) {
            Some(command) => json!({"functionCall": {"name": "run_shell_command",
                "args": {"command": command, "description": "build"}}}),
            None if main => json!({"text": format!("done after {n}")}),
            // The CLI's helpers (its model router) ask for JSON of a schema: an object with
            // each property filled.
            None => json!({"text": filled(body.pointer("/generationConfig/responseJsonSchema")).to_string()}),
        };
        let reply = json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP",
            "index": 0}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-2.5-pro"});
        if main {
            return Reply::sse_text(&format!("data: {reply}\r\n\r\n"));
        }
        Reply::json(200, &reply.to_string())
    })
    .await
}

/// A value of the JSON schema `schema` (objects with every property, strings, numbers).
fn filled(schema: Option<&Value>) -> Value {
    let Some(schema) = schema else { return json!("ok") };
    match schema["type"].as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("object") => {
            let properties = schema["properties"].as_object().into_iter().flatten();
            Value::Object(properties.map(|(k, v)| (k.clone(), filled(Some(v)))).collect())
        }
        Some("integer" | "number") => json!(10),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        _ => json!("simple"),
    }
}

/// Installs the hooks in a fresh home's user settings and runs `gemini -p` against `model`;
/// returns its exit code, its JSON result and its stderr.
async fn gemini(clients: &Path, dir: &Path, model: &FakeServer) -> (Option<i32>, Value, String) {
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    // The user's own settings: an API key login, no folder-trust prompt, and Gemini CLI's own
    // loop detector off (it stops an identical call at its 5th), so the test sees looprail's
    // whole ladder.
    let mine = json!({"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
        "general": {"enableAutoUpdate": false}, "model": {"disableLoopDetection": true}});
    std::fs::write(home.join(".gemini/settings.json"), mine.to_string()).unwrap();
    let install = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["hook", "install", "gemini-cli", "--user", "--store"])
        .arg(dir.join("hooks.db"))
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    let work = dir.join("project");
    std::fs::create_dir_all(&work).unwrap();
    let mut command = Command::new("timeout");
    command
        .arg("300")
        .arg(clients.join("node_modules/.bin/gemini"))
        .args(["-p", "run the build", "--yolo", "--output-format", "json"])
        .env("HOME", &home)
        .env("GEMINI_API_KEY", "test-key")
        .env("GOOGLE_GEMINI_BASE_URL", &model.url)
        .env("NO_COLOR", "1")
        .current_dir(&work)
        .stdin(std::process::Stdio::null());
    let out = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| json!({"unparsed": stdout}));
    (out.status.code(), result, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The main loop's requests, as text.
fn main_loop(model: &FakeServer) -> Vec<String> {
    model.requests().iter().filter(|r| r.body.get("tools").is_some()).map(|r| r.body.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_repeating_one_command_is_told_denied_and_stopped_through_the_hook() {
    let Some(clients) = node::clients() else { return };
    let dir = tempfile::tempdir().unwrap();
    let model = model(|n| (n < 30).then(|| "echo 'make: *** No rule to make target'".to_owned())).await;
    let (code, result, stderr) = gemini(&clients, dir.path(), &model).await;
    assert_eq!(code, Some(0), "the CLI exits cleanly: {result}\n{stderr}");
    let requests = main_loop(&model);
    let told = requests.iter().position(|r| r.contains("[looprail] You have repeated calls"));
    let denied = requests.iter().position(|r| r.contains("[looprail] Denied: this exact"));
    assert!(told.is_some(), "the remark reached the model with the tool's result");
    assert!(denied > told, "then a repeat was denied");
    assert!(stderr.contains("stopped by hook: [looprail]"), "then the agent was stopped: {stderr}");
    let calls = result.pointer("/stats/tools/byName/run_shell_command/count").and_then(Value::as_u64);
    assert!(calls.is_some_and(|c| c <= 9), "stopped long before the model's 30 calls: {calls:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_session_of_100_distinct_commands_is_never_touched() {
    let Some(clients) = node::clients() else { return };
    let dir = tempfile::tempdir().unwrap();
    let model = model(|n| (n < 100).then(|| format!("echo step {n}"))).await;
    let (code, result, stderr) = gemini(&clients, dir.path(), &model).await;
    assert_eq!(code, Some(0), "{result}\n{stderr}");
    assert_eq!(result["response"], "done after 100", "{result}");
    assert!(main_loop(&model).iter().all(|r| !r.contains("[looprail]")), "no remark, no denial");
}
