//! `looprail hook install`: the hook entries merged into the agent's settings file. The user's
//! other settings and hooks are kept as they are; installing twice changes nothing; uninstalling
//! removes only looprail's entries.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::HookError;
use crate::agents::Agent;

/// Which settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The project's (`.claude/settings.json`, `.codex/hooks.json`, `.github/hooks/looprail.json`
    /// … under this directory).
    Project(PathBuf),
    /// The user's (`~/.claude/settings.json`, `~/.codex/hooks.json` … under this home).
    User(PathBuf),
    /// The user's, in the agent's own configuration directory (`$CLAUDE_CONFIG_DIR`,
    /// `$CODEX_HOME`, `$COPILOT_HOME`), which replaces the folder under the home directory.
    AgentHome(PathBuf),
}

impl Scope {
    /// The user's scope for `agent` as the agent itself finds it: its own configuration
    /// directory when its variable is set, else the folder under `$HOME`; `None` without either.
    pub fn user(agent: Agent) -> Option<Scope> {
        let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        match agent.home_variable().and_then(set) {
            Some(dir) => Some(Scope::AgentHome(dir)),
            None => set("HOME").map(Scope::User),
        }
    }
}

/// The settings file of `agent` for `scope`. Codex keeps hooks in a `hooks.json` of their own;
/// Copilot CLI reads every file of a hooks folder, so looprail's is `looprail.json`, its own.
pub fn settings_path(agent: Agent, scope: &Scope) -> PathBuf {
    let (folder, file) = match agent {
        Agent::ClaudeCode => (".claude", "settings.json"),
        Agent::GeminiCli => (".gemini", "settings.json"),
        Agent::QwenCode => (".qwen", "settings.json"),
        Agent::Codex => (".codex", "hooks.json"),
        Agent::Copilot => match scope {
            Scope::Project(dir) => return dir.join(".github").join("hooks").join("looprail.json"),
            _ => (".copilot", "hooks/looprail.json"),
        },
    };
    match scope {
        Scope::Project(base) | Scope::User(base) => base.join(folder).join(file),
        Scope::AgentHome(dir) => dir.join(file),
    }
}

/// The events looprail hooks, and whether each takes a tool matcher.
fn events(agent: Agent) -> &'static [(&'static str, bool)] {
    match agent {
        // Copilot CLI: the PascalCase names, whose events carry their name and snake_case fields.
        Agent::ClaudeCode | Agent::QwenCode | Agent::Copilot => &[
            ("PreToolUse", true),
            ("PostToolUse", true),
            ("PostToolUseFailure", true),
            ("UserPromptSubmit", false),
            ("SessionStart", false),
            ("SessionEnd", false),
            ("Stop", false),
        ],
        Agent::Codex => &[
            ("PreToolUse", true),
            ("PostToolUse", true),
            ("UserPromptSubmit", false),
            ("SessionStart", false),
            ("Stop", false),
        ],
        Agent::GeminiCli => &[
            ("BeforeTool", false),
            ("AfterTool", false),
            ("BeforeAgent", false),
            ("SessionStart", false),
            ("SessionEnd", false),
        ],
    }
}

/// Whether an event's list holds groups (`{"matcher": …, "hooks": [entries]}`) or, for
/// Copilot CLI, the entries themselves.
fn grouped(agent: Agent) -> bool {
    agent != Agent::Copilot
}

/// Every hook entry of `settings` for `agent`, in the agent's layout.
pub(crate) fn entries(settings: &Value, agent: Agent) -> Vec<&Value> {
    let hooks = settings.get("hooks").and_then(Value::as_object).into_iter().flatten();
    let lists = hooks.flat_map(|(_, list)| list.as_array().into_iter().flatten());
    if grouped(agent) {
        lists.flat_map(|group| group.get("hooks").and_then(Value::as_array).into_iter().flatten()).collect()
    } else {
        lists.collect()
    }
}

/// What the agent's hook entries run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A command line (`'/usr/bin/looprail' hook claude-code`).
    Command(String),
    /// A looprail gateway's hook endpoint, by the gateway's base URL (`http://127.0.0.1:8787`);
    /// `key_env`, when the gateway needs a client key: the environment variable the agent reads
    /// it from.
    Http {
        /// The gateway's base URL.
        gateway: String,
        /// The variable holding the gateway's client key.
        key_env: Option<String>,
    },
}

impl Target {
    /// The hook endpoint's URL for `agent`.
    pub fn url(gateway: &str, agent: Agent) -> String {
        format!("{}/v1/hooks/{}", gateway.trim_end_matches('/'), agent.name())
    }

    /// A gateway target, its URL checked: `http://` or `https://` and nothing a shell or JSON
    /// would read twice (no whitespace or quotes).
    pub fn http(gateway: &str, key_env: Option<String>) -> Result<Self, HookError> {
        let scheme = gateway.starts_with("http://") || gateway.starts_with("https://");
        let plain = !gateway.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\''));
        if !scheme || !plain {
            return Err(HookError::Settings(format!(
                "`{gateway}` is not a gateway URL (http://host:port or https://…)"
            )));
        }
        if let Some(name) = &key_env
            && (name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return Err(HookError::Settings(format!("`{name}` is not an environment variable's name")));
        }
        Ok(Target::Http { gateway: gateway.to_owned(), key_env })
    }
}

/// True for a hook entry looprail installed for `agent`: `looprail hook <agent>` or
/// `looprail-hook <agent>`, however the program's path is written, or a URL of a gateway's
/// hook endpoint for `agent`.
pub(crate) fn is_ours(hook: &Value, agent: Agent) -> bool {
    if let Some(url) = hook.get("url").and_then(Value::as_str) {
        return hook.get("type").and_then(Value::as_str) == Some("http")
            && url.trim_end_matches('/').ends_with(&format!("/v1/hooks/{}", agent.name()));
    }
    // Copilot CLI names a Unix command `bash`.
    let command = hook.get("command").or_else(|| hook.get("bash")).and_then(Value::as_str);
    let Some(command) = command else { return false };
    let words: Vec<&str> =
        command.split_whitespace().map(|w| w.trim_matches(|c| c == '\'' || c == '"')).collect();
    words.windows(2).any(|pair| {
        pair[1] == agent.name()
            && (pair[0] == "hook"
                || pair[0].ends_with("looprail-hook")
                || pair[0].ends_with("looprail-hook.exe"))
    }) && command.contains("looprail")
}

/// `settings` without looprail's entries for `agent` (groups and events left empty by that
/// are removed).
///
/// ```
/// use looprail_hook::agents::Agent;
/// use looprail_hook::install::{Target, install, uninstall};
/// use serde_json::json;
///
/// let mine = json!({"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash",
///     "hooks": [{"type": "command", "command": "./check.sh"}]}]}});
/// let command = Target::Command("'/usr/bin/looprail' hook claude-code".into());
/// let with = install(&mine, Agent::ClaudeCode, &command)?;
/// assert_eq!(install(&with, Agent::ClaudeCode, &command)?, with);
/// assert_eq!(uninstall(&with, Agent::ClaudeCode)?, mine);
/// // The same through a gateway: the entries are replaced, not added.
/// let gateway = Target::http("http://127.0.0.1:8787", None)?;
/// let http = install(&with, Agent::ClaudeCode, &gateway)?;
/// assert_eq!(http["hooks"]["PreToolUse"][1]["hooks"][0]["url"], "http://127.0.0.1:8787/v1/hooks/claude-code");
/// assert_eq!(uninstall(&http, Agent::ClaudeCode)?, mine);
/// # Ok::<(), looprail_hook::HookError>(())
/// ```
pub fn uninstall(settings: &Value, agent: Agent) -> Result<Value, HookError> {
    let mut settings = settings.clone();
    let Some(root) = settings.as_object_mut() else {
        return Err(HookError::Settings("the settings file is not a JSON object".into()));
    };
    let Some(hooks) = root.get_mut("hooks") else { return Ok(settings) };
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(HookError::Settings("`hooks` is not an object".into()));
    };
    for (event, _) in events(agent) {
        let Some(groups) = hooks.get_mut(*event).and_then(Value::as_array_mut) else { continue };
        if grouped(agent) {
            for group in groups.iter_mut() {
                if let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                    list.retain(|hook| !is_ours(hook, agent));
                }
            }
            groups.retain(|g| g.get("hooks").and_then(Value::as_array).is_none_or(|l| !l.is_empty()));
        } else {
            groups.retain(|hook| !is_ours(hook, agent));
        }
        if groups.is_empty() {
            hooks.remove(*event);
        }
    }
    if hooks.is_empty() {
        root.remove("hooks");
    }
    Ok(settings)
}

/// `settings` with looprail's entries for `agent` running `target` (any earlier ones
/// replaced). A gateway target is refused for Gemini CLI, Codex and Copilot CLI: looprail
/// installs their hooks as commands.
pub fn install(settings: &Value, agent: Agent, target: &Target) -> Result<Value, HookError> {
    let mut settings = uninstall(settings, agent)?;
    let root = settings.as_object_mut().ok_or_else(|| HookError::Settings("not a JSON object".into()))?;
    let hooks = root.entry("hooks").or_insert_with(|| Value::Object(Map::new()));
    let hooks =
        hooks.as_object_mut().ok_or_else(|| HookError::Settings("`hooks` is not an object".into()))?;
    for (event, matcher) in events(agent) {
        let entry = match (agent, target) {
            (Agent::ClaudeCode, Target::Command(command)) => {
                json!({"type": "command", "command": command, "timeout": 10})
            }
            // Qwen Code's command timeouts are in milliseconds, its HTTP ones in seconds.
            (Agent::QwenCode, Target::Command(command)) => {
                json!({"type": "command", "command": command, "timeout": 10_000})
            }
            (Agent::ClaudeCode | Agent::QwenCode, Target::Http { gateway, key_env }) => {
                let mut entry = json!({"type": "http", "url": Target::url(gateway, agent), "timeout": 10});
                if let Some(name) = key_env {
                    // `${NAME}`: the form both agents interpolate.
                    entry["headers"] = json!({"Authorization": format!("Bearer ${{{name}}}")});
                    entry["allowedEnvVars"] = json!([name]);
                }
                entry
            }
            (Agent::GeminiCli, Target::Command(command)) => {
                json!({"name": "looprail", "type": "command", "command": command, "timeout": 10_000})
            }
            (Agent::Codex, Target::Command(command)) => {
                json!({"type": "command", "command": command, "timeout": 10})
            }
            (Agent::Copilot, Target::Command(command)) => {
                json!({"type": "command", "bash": command, "timeoutSec": 10})
            }
            (Agent::GeminiCli | Agent::Codex | Agent::Copilot, Target::Http { .. }) => {
                return Err(HookError::Settings(format!(
                    "looprail installs {}'s hooks as command hooks only: install without --http",
                    agent.title()
                )));
            }
        };
        let mut group = if grouped(agent) { json!({"hooks": [entry]}) } else { entry };
        if *matcher && grouped(agent) {
            group["matcher"] = json!("*");
        }
        let groups = hooks.entry(*event).or_insert_with(|| json!([]));
        let groups = groups
            .as_array_mut()
            .ok_or_else(|| HookError::Settings(format!("`hooks.{event}` is not a list")))?;
        groups.push(group);
    }
    if agent == Agent::Copilot {
        root.entry("version").or_insert(json!(1));
    }
    if agent == Agent::GeminiCli {
        // Gemini CLI runs hooks only with them enabled; a user's explicit `false` is theirs.
        let config = root.entry("hooksConfig").or_insert_with(|| json!({}));
        if let Some(config) = config.as_object_mut() {
            config.entry("enabled").or_insert(json!(true));
        }
    }
    Ok(settings)
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The file now holds looprail's hooks (it was written).
    Installed,
    /// looprail's hooks were removed (it was written).
    Removed,
    /// The file already said so (it was not written).
    Unchanged,
}

/// Installs (or, with `remove`, uninstalls) looprail's hooks in the settings file at `path`: a
/// missing file is created; one that is not JSON is refused and left as it is. The file is
/// replaced in one rename, never half written.
pub fn apply(path: &Path, agent: Agent, target: &Target, remove: bool) -> Result<Change, HookError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(HookError::Settings(format!("{}: {error}", path.display()))),
    };
    let current: Value = if text.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(&text).map_err(|e| {
            HookError::Settings(format!("{} is not JSON ({e}); left as it is", path.display()))
        })?
    };
    let next = if remove { uninstall(&current, agent)? } else { install(&current, agent, target)? };
    if next == current && !text.is_empty() {
        return Ok(Change::Unchanged);
    }
    // Copilot CLI's file is looprail's alone: without its hooks it goes.
    if remove && agent == Agent::Copilot && next.get("hooks").is_none() {
        std::fs::remove_file(path).map_err(|e| HookError::Settings(format!("{}: {e}", path.display())))?;
        return Ok(Change::Removed);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| HookError::Settings(format!("{}: {e}", dir.display())))?;
    }
    let pretty = serde_json::to_string_pretty(&next).map_err(|e| HookError::Settings(e.to_string()))? + "\n";
    let temp = path.with_extension("json.looprail-tmp");
    std::fs::write(&temp, pretty).map_err(|e| HookError::Settings(format!("{}: {e}", temp.display())))?;
    std::fs::rename(&temp, path).map_err(|e| HookError::Settings(format!("{}: {e}", path.display())))?;
    Ok(if remove { Change::Removed } else { Change::Installed })
}
