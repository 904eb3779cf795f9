//! The coding CLIs' hooks over HTTP (`POST /v1/hooks/{agent}`): every event gets the answer the
//! command hook (`looprail hook <agent>`) gives on stdout, session state lives in the gateway's
//! store and replicas on one PostgreSQL share it, client keys apply, and what is not an event
//! is refused with one line, never a block.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use looprail_gateway::{Gateway, GatewayConfig};
use looprail_hook::agents::Agent;
use looprail_hook::session::Hook;
use serde_json::{Value, json};

fn pre(session: &str, command: &str) -> Value {
    json!({"session_id": session, "transcript_path": "/t.jsonl", "cwd": "/w", "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run it"}, "tool_use_id": "toolu_x"})
}

fn post(session: &str, command: &str, stdout: &str) -> Value {
    let mut event = pre(session, command);
    event["hook_event_name"] = json!("PostToolUse");
    event["tool_response"] = json!({"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false});
    event
}

/// A session that starts, gets a prompt, then runs the same failing `make test` ten times.
fn looping_session(session: &str) -> Vec<Value> {
    let mut events = vec![
        json!({"session_id": session, "hook_event_name": "SessionStart", "source": "startup"}),
        json!({"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": "fix the tests"}),
    ];
    for _ in 0..10 {
        events.push(pre(session, "make test"));
        events.push(post(session, "make test", "FAILED: 3 tests"));
    }
    events
}

/// What the command hook prints for each event, on a store of its own.
fn command_hook_answers(events: &[Value]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    let hook = Hook::new(GatewayConfig::default().loop_config, Default::default());
    events
        .iter()
        .map(|e| {
            looprail_hook::respond::respond(Agent::ClaudeCode, e.to_string().as_bytes(), &store, &hook, 0)
                .stdout
        })
        .collect()
}

async fn http_answers(client: &reqwest::Client, urls: &[String], events: &[Value]) -> Vec<String> {
    let mut answers = Vec::new();
    for (n, event) in events.iter().enumerate() {
        let url = format!("{}/v1/hooks/claude-code", urls[n % urls.len()]);
        let response = common::post_json(client, &url, event).await;
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
        let text = response.text().await.unwrap();
        answers.push(if text == "{}" { String::new() } else { text });
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_gets_the_command_hooks_answer() {
    let url = common::serve(GatewayConfig::default(), "hooks").await;
    let events = looping_session("s1");
    let expected = command_hook_answers(&events);
    let answers = http_answers(&reqwest::Client::new(), &[url], &events).await;
    assert_eq!(answers, expected);
    // The ladder in full: nudged, told, denied, asked, stopped.
    let said = answers.join("\n");
    for rung in ["You have repeated calls", "Stop repeating", "Denied", "\"ask\"", "stopped"] {
        assert!(said.contains(rung), "{rung}: {said}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_one_postgresql_share_a_session() {
    let Some(server) = looprail_testkit_postgres::server_or_skip("the hooks replica test") else { return };
    let database = server.fresh_database().await;
    let mut urls = Vec::new();
    for _ in 0..2 {
        let store = looprail_journal::PostgresStore::connect(&database).await.unwrap();
        let gateway = Gateway::new(GatewayConfig::default(), store.into()).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}", listener.local_addr().unwrap()));
        tokio::spawn(looprail_gateway::serve(listener, gateway, std::future::pending()));
    }
    let events = looping_session("shared");
    let answers = http_answers(&reqwest::Client::new(), &urls, &events).await;
    assert_eq!(answers, command_hook_answers(&events), "alternating replicas answer as one process");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_keys_apply_and_what_is_not_an_event_gets_one_line() {
    let settings = GatewayConfig { require_key: Some("sk-gateway".into()), ..Default::default() };
    let url = common::serve(settings, "hooks-keys").await;
    let client = reqwest::Client::new();
    let hook = format!("{url}/v1/hooks/claude-code");
    let event = pre("s", "ls");
    let refused = common::post_json(&client, &hook, &event).await;
    assert_eq!(refused.status(), 401);
    let keyed = |url: &str, body: String| {
        client.post(url.to_owned()).header("authorization", "Bearer sk-gateway").body(body).send()
    };
    assert_eq!(keyed(&hook, event.to_string()).await.unwrap().status(), 200);
    let bad = keyed(&hook, "not json".into()).await.unwrap();
    assert_eq!(bad.status(), 400);
    let text = bad.text().await.unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("goes on unguarded"), "{text}");
    let unknown = keyed(&format!("{url}/v1/hooks/vim"), event.to_string()).await.unwrap();
    assert_eq!(unknown.status(), 404);
}

/// A gateway on the SQLite store at `path`, with its stop.
async fn sqlite_gateway(
    path: &std::path::Path,
    save_order: looprail_gateway::SaveOrder,
) -> (String, tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let store = looprail_journal::SqliteStore::open(path).await.unwrap();
    let gateway = Gateway::new(GatewayConfig { save_order, ..Default::default() }, store.into()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(looprail_gateway::serve(listener, gateway, async move {
        let _ = stopped.await;
    }));
    (url, stop, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_kept_in_memory_are_written_behind_and_survive_a_restart() {
    // On SQLite the answer goes out before the save: the session lives in memory and is written
    // behind. A stopped gateway has written it; the next one reads it and goes on.
    let store = common::TempStore::new("hooks-restart");
    let events = looping_session("restart");
    let expected = command_hook_answers(&events);
    let half = events.len() / 2;
    let client = reqwest::Client::new();
    let mut answers = Vec::new();
    for part in [&events[..half], &events[half..]] {
        let (url, stop, task) = sqlite_gateway(&store, looprail_gateway::SaveOrder::Auto).await;
        answers.extend(http_answers(&client, &[url], part).await);
        stop.send(()).unwrap();
        task.await.unwrap();
    }
    assert_eq!(answers, expected, "the second gateway went on from the first one's state");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saving_before_the_answer_gives_the_same_answers() {
    let store = common::TempStore::new("hooks-before");
    let (url, _stop, _task) = sqlite_gateway(&store, looprail_gateway::SaveOrder::BeforeAnswer).await;
    let events = looping_session("before");
    assert_eq!(http_answers(&reqwest::Client::new(), &[url], &events).await, command_hook_answers(&events));
}
