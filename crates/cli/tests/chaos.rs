//! The multi-worker chaos test (issue 17): several `looprail worker` processes on one
//! PostgreSQL database, a local fake model, runs spread over lanes, each run reading a file,
//! writing one (a side effect) and answering; a supervisor SIGKILLs a random worker every few
//! seconds and starts a replacement. A write whose outcome a kill left unknown waits for a human
//! (and holds its lane, so the lane's later runs wait too); the supervisor plays that human: it
//! looks at the file and resolves the call with `looprail resolve --queue` (`--done` when the
//! file was written, `--retry` when not), and a worker goes on. Then: every run completed (or,
//! taken over `MAX_TAKEOVERS` times, was given up for a human), none is stranded after a last
//! reconcile, no lane ever had two runs active at once, and no write was
//! started twice unless a human said to retry it.
//!
//! CI runs a short version; `cargo xtask chaos` the full one (200 runs, 20 lanes), through
//! `LOOPRAIL_CHAOS_RUNS`, `LOOPRAIL_CHAOS_LANES`, `LOOPRAIL_CHAOS_WORKERS`,
//! `LOOPRAIL_CHAOS_KILL_MS`, `LOOPRAIL_CHAOS_MODEL_MS`, `LOOPRAIL_CHAOS_SETTLE_SECS`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{json_call, json_text, temp_dir};
use looprail::journal::{MAX_TAKEOVERS, PostgresStore, RunStatus, RunStore, Waiting, waiting_from};
use looprail_providers::fake::FakeServer;

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Every model request, as (job, when).
type Requests = Arc<Mutex<Vec<(usize, Instant)>>>;

/// The model: read notes.txt, then write `out/job-<n>.txt`, then answer; the job number comes
/// from the user message, the step from the tool results so far.
async fn model(requests: Requests) -> FakeServer {
    FakeServer::responding(move |body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let job = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .find_map(|m| m["content"].as_str().and_then(|t| t.strip_prefix("job ")).and_then(|n| n.parse().ok()))
            .unwrap_or(usize::MAX);
        requests.lock().unwrap().push((job, Instant::now()));
        let reply = match messages.iter().filter(|m| m["role"] == "tool").count() {
            0 => json_call("c1", "read_file", r#"{"path": "notes.txt"}"#),
            1 => {
                let args = serde_json::json!({ "path": format!("out/job-{job}.txt"), "content": format!("done {job}") });
                json_call("c2", "write_file", &args.to_string())
            }
            _ => json_text(&format!("finished {job}")),
        };
        // A model that takes a moment, so that kills land inside runs.
        reply.after(Duration::from_millis(knob("LOOPRAIL_CHAOS_MODEL_MS", 120)))
    })
    .await
}

fn looprail(args: &[String]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_looprail"));
    command.args(args).env("OPENAI_API_KEY", "sk-test").env_remove("LOOPRAIL_STORE");
    command
}

fn start_worker(url: &str, dir: &std::path::Path, name: &str) -> Child {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
    let args: Vec<String> = ["worker", "--store", url, "--poll-ms", "50", "--stale-after-secs", "3"]
        .iter()
        .map(|s| (*s).to_owned())
        .chain(["--reconcile-secs".into(), "2".into(), "--name".into(), name.into()])
        .collect();
    looprail(&args).stdout(Stdio::null()).stderr(log).spawn().unwrap()
}

/// A small xorshift: which worker dies next (no randomness crate for one test).
struct Dice(u64);

impl Dice {
    fn roll(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_workers_lose_no_run_share_no_lane_and_repeat_no_side_effect() {
    let Some(server) = looprail_testkit_postgres::server_or_skip("the chaos test") else { return };
    let (runs, lanes) = (knob("LOOPRAIL_CHAOS_RUNS", 36) as usize, knob("LOOPRAIL_CHAOS_LANES", 6) as usize);
    let (workers, kill_every) = (
        knob("LOOPRAIL_CHAOS_WORKERS", 3) as usize,
        Duration::from_millis(knob("LOOPRAIL_CHAOS_KILL_MS", 1_500)),
    );
    let url = server.fresh_database().await;
    let dir = temp_dir("chaos");
    std::fs::write(dir.join("fast.toml"), "[journal]\nheartbeat_secs = 1\nstale_after_secs = 3\n").unwrap();
    let requests: Requests = Arc::default();
    let fake = model(Arc::clone(&requests)).await;

    for job in 0..runs {
        let args: Vec<String> = [
            "submit",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            &format!("{}/v1", fake.url),
            "--no-stream",
            "--store",
            &url,
            "--workdir",
            &dir.join("work").display().to_string(),
            "--config",
            &dir.join("fast.toml").display().to_string(),
            "--lane",
            &format!("lane{}", job % lanes),
            &format!("job {job}"),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let out = tokio::task::spawn_blocking(move || looprail(&args).output().unwrap()).await.unwrap();
        assert_eq!(out.status.code(), Some(0), "submit: {}", String::from_utf8_lossy(&out.stderr));
    }

    let store = PostgresStore::connect(&url).await.unwrap();
    let mut names: Vec<String> = (0..workers).map(|i| format!("w{i}")).collect();
    let mut pool: Vec<Child> = names.iter().map(|name| start_worker(&url, &dir, name)).collect();
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()));
    let (mut kills, started, mut spawned) = (0, Instant::now(), workers);
    let mut retried: HashMap<String, i64> = HashMap::new();
    let mut resolved = 0;
    loop {
        tokio::time::sleep(kill_every).await;
        let rows = store.runs().await.unwrap();
        // At least one kill lands before the runs may settle: a test that killed nothing would
        // prove nothing.
        if kills > 0 && rows.iter().all(|r| r.status == RunStatus::Completed || given_up(r)) {
            break;
        }
        for row in rows.iter().filter(|r| r.status == RunStatus::WaitingOnHuman) {
            resolve(&store, &url, &dir, row, &mut retried).await;
            resolved += 1;
        }
        if started.elapsed() > Duration::from_secs(knob("LOOPRAIL_CHAOS_SETTLE_SECS", 600)) {
            // One line a run (the rows carry whole recipes, too long for a CI log).
            let states: Vec<String> = rows
                .iter()
                .map(|r| {
                    format!(
                        "job {} {} {:?} takeovers {} resumable {} worker {:?}",
                        job_of(r),
                        r.lane,
                        r.status,
                        r.takeovers,
                        r.resume_available,
                        r.worker
                    )
                })
                .collect();
            panic!("the runs did not settle:\n{}", states.join("\n"));
        }
        // A worker driving a run dies when there is one (a kill of an idle worker tests little).
        let driving: Vec<usize> = (0..pool.len())
            .filter(|i| {
                rows.iter().any(|r| r.status == RunStatus::Running && r.worker.as_deref() == Some(&names[*i]))
            })
            .collect();
        let victim =
            if driving.is_empty() { dice.roll(pool.len()) } else { driving[dice.roll(driving.len())] };
        pool[victim].kill().unwrap(); // SIGKILL
        pool[victim].wait().unwrap();
        kills += 1;
        names[victim] = format!("w{spawned}");
        pool[victim] = start_worker(&url, &dir, &names[victim]);
        spawned += 1;
    }
    for mut worker in pool {
        let _ = Command::new("kill").args(["-TERM", &worker.id().to_string()]).status();
        worker.wait().unwrap();
    }
    let elapsed = started.elapsed();

    // No run stranded after a last reconcile.
    store
        .reconcile(looprail::journal::now_ms(), Duration::from_secs(3), Duration::from_secs(180))
        .await
        .unwrap();
    let rows = store.runs().await.unwrap();
    assert_eq!(rows.len(), runs);
    let mut given_up_runs = 0;
    for row in &rows {
        let job = job_of(row);
        if given_up(row) {
            given_up_runs += 1;
            continue;
        }
        assert_eq!(row.status, RunStatus::Completed, "run {} stranded", row.run_id);
        let outcome = store.final_outcome(&row.run_id).await.unwrap().unwrap();
        assert_eq!(outcome.final_text, format!("finished {job}"));
        let written = std::fs::read_to_string(dir.join(format!("work/out/job-{job}.txt"))).unwrap();
        assert_eq!(written, format!("done {job}"));
    }

    let takeovers: i64 = rows.iter().map(|r| r.takeovers).sum();
    eprintln!(
        "chaos: {runs} runs on {lanes} lanes, {workers} workers, {kills} kills, {takeovers} take-overs, \
         {resolved} resolved by the supervisor ({} retried), {given_up_runs} given up after \
         {MAX_TAKEOVERS} take-overs, {elapsed:?}",
        retried.len()
    );

    // The chaos happened: workers were killed and their runs taken over. A run is given up
    // only after MAX_TAKEOVERS take-overs, each following the death of the worker holding it
    // (a worker drives one run at a time), so the kills bound the runs given up.
    assert!(kills > 0 && takeovers > 0, "no kill or no take-over: the test proved nothing");
    assert!(
        given_up_runs as i64 * MAX_TAKEOVERS <= kills as i64,
        "{given_up_runs} runs given up after only {kills} kills"
    );

    // No side effect started twice, but where the human said to retry it.
    let attempts: Vec<(String, i64)> =
        sqlx_rows(&store, "SELECT run_id, attempts FROM tool_calls WHERE tool = 'write_file'").await;
    assert!(attempts.len() >= runs - given_up_runs, "every run wrote");
    assert!(
        attempts.iter().all(|(run, n)| *n <= 1 + retried.get(run).copied().unwrap_or(0)),
        "a write started twice: {attempts:?} (retried: {retried:?})"
    );

    // No lane had two runs active at once: each job's model requests span an interval, and
    // the intervals of a lane's jobs never overlap.
    let mut spans: HashMap<usize, (Instant, Instant)> = HashMap::new();
    for (job, at) in requests.lock().unwrap().iter() {
        let span = spans.entry(*job).or_insert((*at, *at));
        span.0 = span.0.min(*at);
        span.1 = span.1.max(*at);
    }
    for lane in 0..lanes {
        let mut lane_spans: Vec<(Instant, Instant, usize)> = spans
            .iter()
            .filter(|(job, _)| *job % lanes == lane)
            .map(|(job, (a, b))| (*a, *b, *job))
            .collect();
        lane_spans.sort();
        for pair in lane_spans.windows(2) {
            assert!(pair[0].1 < pair[1].0, "lane {lane}: jobs {} and {} overlapped", pair[0].2, pair[1].2);
            assert!(pair[0].2 < pair[1].2, "lane {lane}: job {} ran before job {}", pair[1].2, pair[0].2);
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A run whose workers kept dying under it: after `MAX_TAKEOVERS` take-overs the reconciler
/// times it out and no worker takes it again; it is left to a human, by design (a run that
/// kills every worker that drives it must not go round the pool for ever). Random kills every
/// few hundred milliseconds do this to a run now and then.
fn given_up(row: &looprail::journal::RunRow) -> bool {
    row.status == RunStatus::TimedOut && row.takeovers >= MAX_TAKEOVERS
}

fn job_of(row: &looprail::journal::RunRow) -> usize {
    row.input.strip_prefix("job ").unwrap().parse().unwrap()
}

/// The human's part for a run waiting on an interrupted write: look at the file, and say the
/// write was done (it holds what the run meant to write) or to retry it, queued for a worker.
async fn resolve(
    store: &PostgresStore,
    url: &str,
    dir: &std::path::Path,
    row: &looprail::journal::RunRow,
    retried: &mut HashMap<String, i64>,
) {
    let job = job_of(row);
    // What it waits for, as `looprail runs` shows it: the unfinished call, or the call its last
    // checkpoint names (a worker that lost its lease may have finished the write since).
    let unfinished = store.unfinished_tool_calls(&row.run_id).await.unwrap();
    let checkpoint = store.latest_checkpoint(&row.run_id).await.unwrap();
    let waiting = waiting_from(checkpoint.as_ref(), &unfinished);
    // Only a write a kill interrupted may be left to a human.
    let call = match waiting {
        Waiting::UnsafeCall { call_id, tool } if tool == "write_file" => call_id,
        other => panic!("{}: waits for {other}", row.run_id),
    };
    let written = std::fs::read_to_string(dir.join(format!("work/out/job-{job}.txt"))).ok();
    let mut args: Vec<String> =
        ["resolve", "--queue", "--store", url, &row.run_id, &call].iter().map(|s| (*s).to_owned()).collect();
    if written.as_deref() == Some(format!("done {job}").as_str()) {
        args.extend(["--done".to_owned(), "written".to_owned()]);
    } else {
        args.push("--retry".to_owned());
        *retried.entry(row.run_id.clone()).or_default() += 1;
    }
    let out = tokio::task::spawn_blocking(move || looprail(&args).output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(0), "resolve: {}", String::from_utf8_lossy(&out.stderr));
}

async fn sqlx_rows(store: &PostgresStore, query: &'static str) -> Vec<(String, i64)> {
    use looprail_testkit_postgres::sqlx;
    sqlx::query_as(query).fetch_all(store.pool()).await.unwrap()
}
