//! What the model is told about tools ([`ToolDefinition`]) and which it may call next
//! ([`ToolChoice`]): the vocabulary a provider request and a tool share.

use serde::{Deserialize, Serialize};

/// What the model is told about a tool: its name, purpose and JSON-schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A JSON schema (an `object` schema) for the arguments.
    pub parameters: serde_json::Value,
}

impl ToolDefinition {
    /// A definition from its parts.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Self {
        Self { name: name.into(), description: description.into(), parameters }
    }
}

/// Which tools the model may or must call on the next request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "type", content = "name", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// No tool calls: text only.
    None,
    /// At least one tool call, any tool.
    Required,
    /// Exactly this tool.
    Named(String),
}
