//! The four agent tools over a [`Workdir`]: `read_file`, `list_dir`, `search_text`,
//! `write_file`.

use async_trait::async_trait;
use looprail_loop_core::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolSet};
use serde_json::{Value, json};

use crate::access::Workdir;
use crate::error::WorkdirError;

impl Workdir {
    /// The four tools, sharing this directory handle.
    pub fn tools(&self) -> ToolSet {
        ToolSet::new()
            .with(ReadFile(self.clone()))
            .with(ListDir(self.clone()))
            .with(SearchText(self.clone()))
            .with(WriteFile(self.clone()))
    }
}

impl From<WorkdirError> for ToolError {
    fn from(error: WorkdirError) -> Self {
        if error.is_refusal() {
            ToolError::invalid_arguments(error.to_string())
        } else {
            ToolError::failed(error.to_string())
        }
    }
}

fn string_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::invalid_arguments(format!("`{key}` (a string) is required")))
}

fn optional_path(args: &Value) -> Result<&str, ToolError> {
    match args.get("path") {
        None | Some(Value::Null) => Ok("."),
        Some(Value::String(path)) => Ok(path),
        Some(_) => Err(ToolError::invalid_arguments("`path` must be a string")),
    }
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
            "Read a text file in the work directory (the first 64 KiB of a larger one).",
            json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}),
        )
    }
    fn idempotent(&self) -> bool {
        true
    }
    async fn call(&self, args: Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let read = self.0.read(string_arg(&args, "path")?, self.0.limits.max_read)?;
        let mut text = read.text;
        if read.truncated {
            text.push_str(&format!(
                "\n[file truncated: first {} of {} bytes]",
                self.0.limits.max_read, read.size
            ));
        }
        Ok(text.into())
    }
}

#[async_trait]
impl Tool for ListDir {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "list_dir",
            "List a directory of the work directory (directories end in /, symlinks in @).",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )
    }
    fn idempotent(&self) -> bool {
        true
    }
    async fn call(&self, args: Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(self.0.list(optional_path(&args)?)?.join("\n").into())
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
        let pattern = string_arg(&args, "pattern")?;
        if pattern.is_empty() {
            return Err(ToolError::invalid_arguments("`pattern` must not be empty"));
        }
        let found = self.0.search(optional_path(&args)?, pattern)?;
        let mut text = if found.lines.is_empty() { "no matches".to_owned() } else { found.lines.join("\n") };
        if let Some(cut) = found.cut {
            text.push_str(&format!("\n[{cut}]"));
        }
        Ok(text.into())
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "write_file",
            "Write a text file in the work directory (replacing it; missing directories are created).",
            json!({"type": "object", "required": ["path", "content"], "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}),
        )
    }
    async fn call(&self, args: Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = string_arg(&args, "path")?;
        let content = string_arg(&args, "content")?;
        let written = self.0.write(path, content)?;
        Ok(format!("wrote {written} bytes to {path}").into())
    }
}
