//! The systems measured besides the upstream itself, each started as its own process in front of
//! the fake upstream, pointed at it by its own configuration: nginx as a plain reverse proxy,
//! the LiteLLM proxy, and `looprail gateway` with its defaults (the whole guard stack, a SQLite
//! store, every conversation recorded). A system that cannot be started is a reason, not a crash.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::load::Target;
use crate::requests::Api;

/// How long a system may take to answer its first request (LiteLLM imports for seconds).
const STARTUP: Duration = Duration::from_secs(120);

/// A started system; the process is stopped when this is dropped.
pub struct Running {
    child: Child,
    /// Where requests go.
    pub base: String,
}

impl Running {
    /// The process's id (its workers are its children).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// CPU seconds (user and system) used so far by process `pid` and every process below it
/// (nginx's and LiteLLM's workers), from `/proc`; `None` where there is no `/proc`.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(id) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The command may hold spaces and parentheses: fields are counted after its last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let number = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
        // After the command: state(0) ppid(1) ... utime(11) stime(12).
        parents.push((id, number(1) as u32, number(11) + number(12)));
    }
    let mut tree = vec![pid];
    let mut ticks = 0;
    let mut i = 0;
    while i < tree.len() {
        for (id, parent, used) in &parents {
            if *id == tree[i] {
                ticks += used;
            }
            if *parent == tree[i] {
                tree.push(*id);
            }
        }
        i += 1;
    }
    // Linux reports in clock ticks of 1/100 s (USER_HZ) on every architecture it runs on.
    Some(ticks as f64 / 100.0)
}

/// Process `pid` and every process below it.
fn tree(pid: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(id) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let parent = rest.split_whitespace().nth(1).and_then(|f| f.parse::<u32>().ok()).unwrap_or(0);
        parents.push((id, parent));
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(parents.iter().filter(|(_, p)| *p == parent).map(|(id, _)| *id));
        i += 1;
    }
    tree
}

/// Forgets the peak resident memory of `pid`'s processes (`/proc/<pid>/clear_refs`), so the
/// next [`peak_rss_mb`] is the peak from now.
pub fn reset_peak_rss(pid: u32) {
    for id in tree(pid) {
        let _ = std::fs::write(format!("/proc/{id}/clear_refs"), "5");
    }
}

/// The peak resident memory of `pid`'s processes, added up (MB; `VmHWM` of each).
pub fn peak_rss_mb(pid: u32) -> Option<f64> {
    let mut kb = 0u64;
    for id in tree(pid) {
        let status = std::fs::read_to_string(format!("/proc/{id}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        kb += line.split_whitespace().nth(1)?.parse::<u64>().ok()?;
    }
    Some(kb as f64 / 1024.0)
}

/// How long a system asked to stop may take before it is killed.
const STOPPING: Duration = Duration::from_secs(5);

impl Drop for Running {
    fn drop(&mut self) {
        // The whole process group (`start` made one per system): nginx's and LiteLLM's workers
        // outlive a master killed alone, and went on holding memory (and LiteLLM's, CPU)
        // through every later measurement on the machine. Asked to stop first (SIGTERM), as a
        // supervisor would: an instrumented looprail writes its profile only on a clean exit
        // (`cargo xtask pgo` trains on this benchmark).
        #[cfg(unix)]
        {
            let group = format!("-{}", self.child.id());
            let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
            let asked = Instant::now();
            while matches!(self.child.try_wait(), Ok(None)) && asked.elapsed() < STOPPING {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free on loopback now (the system binds it right after).
fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// The last lines a system wrote to its log, for the reason it did not start.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

/// Starts `command` (its output into `log`) and waits until it answers both APIs.
async fn start(
    system: &'static str,
    mut command: Command,
    base: String,
    log: &Path,
) -> Result<Running, String> {
    let file = std::fs::File::create(log).map_err(|e| e.to_string())?;
    // A process group of its own, stopped whole (see `Drop for Running`).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command
        .stdin(Stdio::null())
        .stdout(file.try_clone().map_err(|e| e.to_string())?)
        .stderr(file)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", command.get_program().to_string_lossy()))?;
    let mut running = Running { child, base };
    let target = Target::new(system, running.base.clone()).map_err(|e| e.to_string())?;
    let started = Instant::now();
    for api in [Api::OpenAi, Api::Anthropic] {
        loop {
            if let Ok(Some(status)) = running.child.try_wait() {
                return Err(format!("{system} exited ({status}): {}", log_tail(log)));
            }
            if !target.send(api, target.probe_body(api), Instant::now()).await.failed {
                break;
            }
            if started.elapsed() > STARTUP {
                return Err(format!(
                    "{system} did not answer {} within {STARTUP:?}: {}",
                    api.name(),
                    log_tail(log)
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    Ok(running)
}

/// nginx as a plain reverse proxy: its workers (one per core), kept-alive upstream connections,
/// no buffering (streams pass as they come), no access log.
pub async fn nginx(program: &Path, upstream: &str, dir: &Path) -> Result<Running, String> {
    let port = free_port()?;
    // An HTTPS upstream: verified against the bench's CA, sessions reused on kept-alive
    // connections.
    let (scheme, tls) = match upstream.strip_prefix("https://") {
        Some(_) => (
            "https",
            format!(
                "      proxy_ssl_verify on;\n      proxy_ssl_trusted_certificate {};\n      proxy_ssl_name localhost;\n      proxy_ssl_server_name on;\n      proxy_ssl_session_reuse on;\n",
                crate::upstream::tls_dir().join("ca.pem").display()
            ),
        ),
        None => ("http", String::new()),
    };
    let upstream = upstream.trim_start_matches("http://").trim_start_matches("https://");
    let dir_text = dir.display();
    let conf = format!(
        "worker_processes auto;\nuser root;\npid {dir_text}/nginx.pid;\nerror_log {dir_text}/nginx-error.log warn;\n\
         worker_rlimit_nofile 20000;\n\
         events {{ worker_connections 16384; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {dir_text}/body;\n  proxy_temp_path {dir_text}/proxy;\n\
         \x20 fastcgi_temp_path {dir_text}/fastcgi;\n  uwsgi_temp_path {dir_text}/uwsgi;\n  scgi_temp_path {dir_text}/scgi;\n\
         \x20 keepalive_requests 1000000;\n  upstream fake {{ server {upstream}; keepalive 256; }}\n\
         \x20 server {{\n    listen 127.0.0.1:{port};\n    location / {{\n      proxy_pass {scheme}://fake;\n{tls}\
         \x20     proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n      proxy_buffering off;\n    }}\n  }}\n}}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).map_err(|e| e.to_string())?;
    let mut command = Command::new(program);
    command.arg("-c").arg(&path).arg("-p").arg(dir).args(["-g", "daemon off;"]);
    start("nginx", command, format!("http://127.0.0.1:{port}"), &dir.join("nginx.log")).await
}

/// The LiteLLM proxy with both models routed to the fake upstream: one worker process per core
/// (as its production guide advises), no database. It refuses to start without a master key (clients then send it), as a
/// deployment would have one.
pub async fn litellm(program: &Path, upstream: &str, dir: &Path) -> Result<Running, String> {
    let port = free_port()?;
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let conf = format!(
        "model_list:\n  - model_name: {openai}\n    litellm_params:\n      model: openai/{openai}\n\
         \x20     api_base: {upstream}/v1\n      api_key: bench-key\n  - model_name: {anthropic}\n\
         \x20   litellm_params:\n      model: anthropic/{anthropic}\n      api_base: {upstream}\n\
         \x20     api_key: bench-key\n",
        openai = Api::OpenAi.model(),
        anthropic = Api::Anthropic.model(),
    );
    let path = dir.join("litellm.yaml");
    std::fs::write(&path, conf).map_err(|e| e.to_string())?;
    let mut command = Command::new(program);
    command
        .arg("--config")
        .arg(&path)
        .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--num_workers", &workers.to_string()])
        .env("LITELLM_LOG", "ERROR")
        .env("LITELLM_TELEMETRY", "False")
        .env("LITELLM_MASTER_KEY", crate::load::CLIENT_KEY)
        // The HTTPS upstream's CA, for its HTTP clients (httpx and aiohttp read it).
        .env("SSL_CERT_FILE", crate::upstream::tls_dir().join("ca.pem"))
        .current_dir(dir);
    start("litellm", command, format!("http://127.0.0.1:{port}"), &dir.join("litellm.log")).await
}

/// `looprail gateway` with its defaults: the guard stack, a SQLite store (or the PostgreSQL
/// database `store` names), recording on.
pub async fn looprail(
    system: &'static str,
    program: &Path,
    upstream: &str,
    dir: &Path,
    store: Option<&str>,
) -> Result<Running, String> {
    let port = free_port()?;
    let sqlite: PathBuf = dir.join("looprail.db");
    let mut command = Command::new(program);
    command.args(["gateway", "--listen", &format!("127.0.0.1:{port}")]).arg("--store");
    match store {
        Some(url) => command.arg(url),
        None => command.arg(&sqlite),
    };
    command
        .args(["--openai-upstream", upstream, "--anthropic-upstream", upstream])
        .arg("--record-dir")
        .arg(dir.join("records"))
        // More flags to try a setting (`LOOPRAIL_PEERS_LOOPRAIL_ARGS="--no-record"`).
        .args(std::env::var("LOOPRAIL_PEERS_LOOPRAIL_ARGS").unwrap_or_default().split_whitespace())
        .env_remove("LOOPRAIL_STORE")
        .env_remove("LOOPRAIL_GATEWAY_KEY")
        .env_remove("LOOPRAIL_CONFIG")
        // The HTTPS upstream's CA (the platform's certificate store reads it).
        .env("SSL_CERT_FILE", crate::upstream::tls_dir().join("ca.pem"))
        .env("RUST_LOG", "warn");
    start(system, command, format!("http://127.0.0.1:{port}"), &dir.join("looprail.log")).await
}
