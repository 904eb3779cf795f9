//! Throughput of one and of two gateway replicas on one PostgreSQL store (issue 36): 64
//! concurrent clients continuing 200 conversations against a fake upstream, through one replica,
//! then spread over two. Both replicas run in this process (the machine has two cores: the
//! figure shows what the shared store costs and that a second replica adds no contention, not
//! what a second machine would add). Skipped without PostgreSQL binaries.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use looprail_gateway::{Gateway, GatewayConfig};
use looprail_journal::PostgresStore;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::json;

const CLIENTS: usize = 64;
const REQUESTS: usize = 1_600;

async fn replica(database: &str, upstream: &str) -> String {
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.to_owned();
    settings.upstream.openai_key = Some("k".into());
    let store = PostgresStore::connect(database).await.unwrap();
    let gateway = Gateway::new(settings, store.into()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    tokio::spawn(looprail_gateway::serve(listener, gateway, std::future::pending()));
    url
}

/// Requests per second, p50 and p99 of `REQUESTS` requests from `CLIENTS` clients spread over
/// `urls`.
async fn load(urls: &[String], tag: &str) -> (f64, Duration, Duration) {
    let bodies: Arc<Vec<String>> = Arc::new(
        (0..200)
            .map(|t| {
                json!({"model": "m", "messages": [{"role": "system", "content": "You search."},
                    {"role": "user", "content": format!("{tag} task {t}")}]})
                .to_string()
            })
            .collect(),
    );
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (url, bodies) = (urls[c % urls.len()].clone(), Arc::clone(&bodies));
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut times = Vec::new();
            for i in (c..REQUESTS).step_by(CLIENTS) {
                let sent = Instant::now();
                let response = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(bodies[i % bodies.len()].clone())
                    .send()
                    .await
                    .unwrap();
                assert!(response.status().is_success());
                response.bytes().await.unwrap();
                times.push(sent.elapsed());
            }
            times
        }));
    }
    let mut times = Vec::new();
    for task in tasks {
        times.extend(task.await.unwrap());
    }
    let rate = REQUESTS as f64 / started.elapsed().as_secs_f64();
    times.sort();
    (rate, times[times.len() / 2], times[times.len() * 99 / 100])
}

fn main() {
    let Some(server) = looprail_testkit_postgres::server_or_skip("the replica throughput bench") else {
        println!("gateway replicas on PostgreSQL: skipped (no PostgreSQL binaries)");
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let upstream = FakeServer::responding(|_| {
            Reply::json(200, &json!({"id": "x", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1}}).to_string())
        })
        .await;
        let database = server.fresh_database().await;
        let one = [replica(&database, &upstream.url).await];
        let two = [one[0].clone(), replica(&database, &upstream.url).await];
        let _ = load(&one, "warm-up").await;
        println!("gateway replicas on one PostgreSQL ({CLIENTS} clients, {REQUESTS} requests; 2-core machine)");
        println!("{:>9} {:>10} {:>10} {:>10}", "replicas", "req/s", "p50", "p99");
        for (name, urls) in [("1", &one[..]), ("2", &two[..])] {
            let (rate, p50, p99) = load(urls, name).await;
            println!("{name:>9} {rate:>10.0} {p50:>10.2?} {p99:>10.2?}");
        }
    });
}
