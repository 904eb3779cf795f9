//! A throwaway PostgreSQL server for tests: the one way every looprail test gets a real
//! PostgreSQL.
//!
//! The first call in a test process runs `initdb` into a temporary directory (as an
//! unprivileged user when the tests run as root: PostgreSQL refuses root), starts `postgres`
//! on a free loopback port, and keeps it for the rest of the process; a watchdog stops it and
//! deletes the directory when the test process ends, however it ends. Each test then asks for
//! a fresh database of its own.
//!
//! PostgreSQL's programs are found on the `PATH` or under `/usr/lib/postgresql/*/bin`. When
//! they are missing, [`server`] is an error; tests call [`server_or_skip`], which skips with a
//! note on a developer's machine and panics under CI (`CI` set), so CI never passes by
//! skipping.
//!
//! ```no_run
//! # async fn demo() {
//! let Some(server) = looprail_testkit_postgres::server_or_skip("my test") else { return };
//! let url = server.fresh_database().await;
//! assert!(url.starts_with("postgres://"));
//! # }
//! ```

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

mod locate;

/// The client the helper uses, for tests that inspect a database directly.
pub use sqlx;

use locate::{bin_dir, unprivileged_user};

/// A running throwaway server.
#[derive(Debug)]
pub struct TempPostgres {
    port: u16,
    dir: PathBuf,
    bin: PathBuf,
    user: Option<(u32, u32)>,
    server: Mutex<Child>,
}

static SERVER: OnceLock<Result<TempPostgres, String>> = OnceLock::new();
static DATABASES: AtomicU32 = AtomicU32::new(0);

/// The process's server, started on first use.
pub fn server() -> Result<&'static TempPostgres, String> {
    SERVER.get_or_init(TempPostgres::start).as_ref().map_err(Clone::clone)
}

/// The server, or `None` (with a note on stderr) when PostgreSQL is not installed on a
/// developer's machine. Under CI a missing server is a failure, never a skip.
///
/// # Panics
/// When the server cannot start under CI, or is installed but fails to start.
pub fn server_or_skip(test: &str) -> Option<&'static TempPostgres> {
    match server() {
        Ok(server) => Some(server),
        Err(error) if error.starts_with(locate::NOT_INSTALLED) && std::env::var_os("CI").is_none() => {
            eprintln!("skipping {test}: {error}");
            None
        }
        Err(error) => panic!("PostgreSQL for {test}: {error}"),
    }
}

impl TempPostgres {
    fn start() -> Result<Self, String> {
        let bin = bin_dir()?;
        let user = unprivileged_user()?;
        let dir = std::env::temp_dir().join(format!("looprail-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| format!("chown {}: {e}", dir.display()))?;
        }
        let data = dir.join("data");
        let log = std::fs::File::create(dir.join("server.log")).map_err(|e| e.to_string())?;
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions", "-D"])
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(log.try_clone().map_err(|e| e.to_string())?);
        as_user(&mut initdb, user);
        let status = initdb.status().map_err(|e| format!("initdb: {e}"))?;
        if !status.success() {
            return Err(format!("initdb failed ({status}); see {}", dir.join("server.log").display()));
        }
        let port = free_port()?;
        let child = spawn_server(&bin, user, &dir, port)?;
        watchdog(&dir)?;
        wait_ready(&data, port, &dir)?;
        Ok(Self { port, dir, bin, user, server: Mutex::new(child) })
    }

    /// Stops the server (fast shutdown: every connection is cut), keeps it down for `down_for`,
    /// and starts it again on the same port and data: a database restart or a network cut,
    /// as clients see it.
    ///
    /// # Panics
    /// When the server cannot be stopped or started again.
    pub fn restart(&self, down_for: Duration) {
        let mut server = self.server.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let stopped = Command::new("kill").args(["-INT", &server.id().to_string()]).status();
        assert!(stopped.is_ok_and(|s| s.success()), "stopping the test server");
        server.wait().unwrap_or_else(|e| panic!("waiting for the test server to stop: {e}"));
        std::thread::sleep(down_for);
        *server = spawn_server(&self.bin, self.user, &self.dir, self.port)
            .unwrap_or_else(|e| panic!("restarting the test server: {e}"));
        wait_ready(&self.dir.join("data"), self.port, &self.dir)
            .unwrap_or_else(|e| panic!("restarting the test server: {e}"));
    }

    /// The URL of the server's administrative database.
    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The port the server listens on (loopback).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's directory (its data and `server.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A new empty database for one test; returns its URL.
    ///
    /// # Panics
    /// When the server refuses to create it.
    pub async fn fresh_database(&self) -> String {
        use sqlx::Connection;
        let name = format!("t{}_{}", std::process::id(), DATABASES.fetch_add(1, Ordering::Relaxed));
        let mut admin = sqlx::PgConnection::connect(&self.admin_url())
            .await
            .unwrap_or_else(|e| panic!("connecting to the test server: {e}"));
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        let _ = admin.close().await;
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }
}

/// Starts `postgres` on `dir/data`, listening on loopback `port`, logging to `dir/server.log`.
fn spawn_server(bin: &Path, user: Option<(u32, u32)>, dir: &Path, port: u16) -> Result<Child, String> {
    let log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(dir.join("server.log"))
        .map_err(|e| e.to_string())?;
    let mut postgres = Command::new(bin.join("postgres"));
    postgres
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-F", "-c", "max_connections=300"])
        .args(["-c", "shared_buffers=32MB", "-k"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log);
    as_user(&mut postgres, user);
    postgres.spawn().map_err(|e| format!("postgres: {e}"))
}

/// Runs `command` as `user` (uid, gid) when given.
fn as_user(command: &mut Command, user: Option<(u32, u32)>) {
    use std::os::unix::process::CommandExt;
    if let Some((uid, gid)) = user {
        command.uid(uid).gid(gid);
    }
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// A shell that waits for this test process to end, then stops the server at once and removes
/// its directory (statics are never dropped, and a killed test runs no destructor).
/// The server's pid is read from its `postmaster.pid` at the end, so a restarted server is
/// stopped too.
fn watchdog(dir: &Path) -> Result<(), String> {
    let script = format!(
        "while kill -0 {me} 2>/dev/null; do sleep 1; done; pid=$(head -n 1 '{dir}/data/postmaster.pid'); \
         kill -QUIT $pid 2>/dev/null; sleep 2; kill -KILL $pid 2>/dev/null; rm -rf '{dir}'",
        me = std::process::id(),
        dir = dir.display()
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(|_| ())
        .map_err(|e| format!("watchdog: {e}"))
}

/// Waits until the server says it is ready (`postmaster.pid` ends in `ready`) and accepts
/// connections, for up to 60 s.
fn wait_ready(data: &Path, port: u16, dir: &Path) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let ready = std::fs::read_to_string(data.join("postmaster.pid"))
            .is_ok_and(|pid| pid.lines().map(str::trim).any(|l| l == "ready"));
        if ready && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("the server did not start within 60 s; see {}", dir.join("server.log").display()))
}
