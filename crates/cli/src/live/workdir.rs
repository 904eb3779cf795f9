//! The built-in tools of `looprail run`, confined to a work directory: paths outside it, `..`
//! and symlinks that lead out of it are refused.

use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;
use looprail::core::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolSet};
use serde_json::{Value, json};

/// Largest file `read_file` returns whole.
const MAX_READ: usize = 64 * 1024;

/// A directory the tools may not leave.
#[derive(Debug, Clone)]
pub struct Workdir {
    root: PathBuf,
}

impl Workdir {
    /// Confines tools to `root` (which must exist).
    pub fn new(root: &Path) -> Result<Self, String> {
        let root = root.canonicalize().map_err(|e| format!("work directory {}: {e}", root.display()))?;
        Ok(Self { root })
    }

    /// Resolves a path the model gave, refusing anything that leaves the work directory.
    pub fn resolve(&self, requested: &str) -> Result<PathBuf, ToolError> {
        let refuse = || {
            ToolError::invalid_arguments(format!(
                "`{requested}` is outside the work directory; use a path inside it"
            ))
        };
        let relative = Path::new(requested);
        if relative.is_absolute()
            || relative.components().any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
        {
            return Err(refuse());
        }
        let joined = self.root.join(relative);
        // Follow symlinks of what exists (the file, or for a new file its directory).
        let existing = if joined.exists() {
            joined.clone()
        } else {
            joined.parent().map(Path::to_path_buf).unwrap_or_else(|| self.root.clone())
        };
        let real = existing
            .canonicalize()
            .map_err(|e| ToolError::invalid_arguments(format!("`{requested}`: {e}")))?;
        if !real.starts_with(&self.root) {
            return Err(refuse());
        }
        Ok(if joined.exists() { real } else { real.join(joined.file_name().unwrap_or_default()) })
    }

    /// The four tools.
    pub fn tools(&self) -> ToolSet {
        ToolSet::new()
            .with(ReadFile(self.clone()))
            .with(ListDir(self.clone()))
            .with(SearchText(self.clone()))
            .with(WriteFile(self.clone()))
    }
}

fn path_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::invalid_arguments(format!("`{key}` (a string) is required")))
}

struct ReadFile(Workdir);
struct ListDir(Workdir);
struct SearchText(Workdir);
struct WriteFile(Workdir);

#[async_trait]
impl Tool for ReadFile {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "read_file",
            "Read a text file in the work directory.",
            json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}),
        )
    }
    fn idempotent(&self) -> bool {
        true
    }
    async fn call(&self, args: Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = self.0.resolve(path_arg(&args, "path")?)?;
        let mut text =
            std::fs::read_to_string(&path).map_err(|e| ToolError::failed(format!("cannot read: {e}")))?;
        if text.len() > MAX_READ {
            let mut cut = MAX_READ;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n[file truncated]");
        }
        Ok(text.into())
    }
}

#[async_trait]
impl Tool for ListDir {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "list_dir",
            "List a directory of the work directory.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )
    }
    fn idempotent(&self) -> bool {
        true
    }
    async fn call(&self, args: Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = self.0.resolve(args.get("path").and_then(Value::as_str).unwrap_or("."))?;
        let mut names: Vec<String> = std::fs::read_dir(&path)
            .map_err(|e| ToolError::failed(format!("cannot list: {e}")))?
            .filter_map(Result::ok)
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() { format!("{name}/") } else { name }
            })
            .collect();
        names.sort();
        Ok(names.join("\n").into())
    }
}

#[async_trait]
impl Tool for SearchText {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "search_text",
            "Find lines containing a text in the files of the work directory.",
            json!({"type": "object", "required": ["pattern"], "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}}}),
        )
    }
    fn idempotent(&self) -> bool {
        true
    }
    async fn call(&self, args: Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let pattern = path_arg(&args, "pattern")?;
        let start = self.0.resolve(args.get("path").and_then(Value::as_str).unwrap_or("."))?;
        let mut hits = Vec::new();
        let mut stack = vec![start];
        while let Some(path) = stack.pop() {
            if path.is_dir() {
                if let Ok(entries) = std::fs::read_dir(&path) {
                    stack.extend(
                        entries
                            .filter_map(Result::ok)
                            .map(|e| e.path())
                            .filter(|p| p.canonicalize().is_ok_and(|r| r.starts_with(&self.0.root))),
                    );
                }
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                for (n, line) in text.lines().enumerate().filter(|(_, l)| l.contains(pattern)) {
                    let shown = path.strip_prefix(&self.0.root).unwrap_or(&path).display();
                    hits.push(format!("{shown}:{}: {}", n + 1, line.trim()));
                    if hits.len() >= 100 {
                        return Ok(format!("{}\n[first 100 matches]", hits.join("\n")).into());
                    }
                }
            }
        }
        Ok(if hits.is_empty() { "no matches".into() } else { hits.join("\n").into() })
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "write_file",
            "Write a text file in the work directory (replacing it).",
            json!({"type": "object", "required": ["path", "content"], "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}),
        )
    }
    async fn call(&self, args: Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = self.0.resolve(path_arg(&args, "path")?)?;
        let content = path_arg(&args, "content")?;
        std::fs::write(&path, content).map_err(|e| ToolError::failed(format!("cannot write: {e}")))?;
        Ok(format!("wrote {} bytes", content.len()).into())
    }
}
