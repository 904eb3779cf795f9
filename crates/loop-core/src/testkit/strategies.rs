//! Engine-level strategies (feature `proptest`): random model replies, scripts of them and
//! run limits, for property tests that drive the engine or a [`ScriptedProvider`].
//!
//! ```
//! use looprail_loop_core::testkit::strategies::{ModelTurn, run_limits, script};
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//!
//! let mut runner = TestRunner::deterministic();
//! let turns = script(&["read", "search"], 1..10).new_tree(&mut runner).unwrap().current();
//! assert!(!turns.is_empty());
//! let limits = run_limits().new_tree(&mut runner).unwrap().current();
//! let mut config = looprail_loop_core::config::LoopConfig::default();
//! limits.apply(&mut config);
//! assert!(config.validate().is_ok());
//! let provider = ModelTurn::provider("sim", &turns, &["read", "search"]);
//! assert_eq!(provider.remaining(), turns.len());
//! ```

use std::ops::Range;

use proptest::prelude::*;

use crate::config::LoopConfig;
use crate::message::ToolCall;
use crate::provider::{ModelResponse, ProviderError, ProviderErrorKind, StopReason};
use crate::testkit::{ScriptStep, ScriptedProvider};

/// One model reply of a random script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelTurn {
    /// Tool calls: `(tool index, argument value)` each.
    Tools(Vec<(u8, u8)>),
    /// A final text answer.
    Text,
    /// A reply cut at the output-token cap.
    Truncated,
    /// An empty reply.
    Empty,
    /// A server error.
    Fail,
    /// A call to an unknown tool with arguments that are not JSON.
    BadCall,
}

impl ModelTurn {
    /// The reply (or error) for this turn, the `n`th of the script; tool names are taken from
    /// `tools` by index. Every reply reports 60 input and 40 output tokens.
    pub fn response(&self, n: usize, tools: &[&str]) -> Result<ModelResponse, ProviderError> {
        let model = "sim";
        let tool = |i: u8| tools.get(usize::from(i) % tools.len().max(1)).copied().unwrap_or("tool");
        let reply = match self {
            ModelTurn::Tools(calls) => ModelResponse::tool_calls(
                model,
                calls
                    .iter()
                    .enumerate()
                    .map(|(i, (t, a))| {
                        ToolCall::new(format!("c{n}_{i}"), tool(*t), format!("{{\"a\": {a}}}"))
                    })
                    .collect(),
            ),
            ModelTurn::Text => ModelResponse::text(model, "final"),
            ModelTurn::Truncated => {
                let mut reply = ModelResponse::text(model, "part ");
                reply.stop_reason = StopReason::MaxTokens;
                reply
            }
            ModelTurn::Empty => ModelResponse { text: None, ..ModelResponse::text(model, "") },
            ModelTurn::Fail => return Err(ProviderError::new(ProviderErrorKind::Server, "sim 500")),
            ModelTurn::BadCall => {
                ModelResponse::tool_calls(model, vec![ToolCall::new(format!("c{n}_x"), "nope", "{oops")])
            }
        };
        Ok(reply.with_usage(60, 40))
    }

    /// A [`ScriptedProvider`] answering `turns` in order.
    pub fn provider(model: &str, turns: &[ModelTurn], tools: &[&str]) -> ScriptedProvider {
        turns.iter().enumerate().fold(ScriptedProvider::new(model), |provider, (n, turn)| {
            match turn.response(n, tools) {
                Ok(reply) => provider.then(ScriptStep::Reply(reply)),
                Err(error) => provider.then(ScriptStep::Fail(error)),
            }
        })
    }
}

/// One random reply: mostly tool calls (1–3 per batch), sometimes text, a truncation, an
/// empty reply, a server error or a bad call.
pub fn model_turn(tool_count: u8) -> impl Strategy<Value = ModelTurn> {
    let tool_count = tool_count.max(1);
    prop_oneof![
        5 => prop::collection::vec((0..tool_count, 0u8..3), 1..4).prop_map(ModelTurn::Tools),
        1 => Just(ModelTurn::Text),
        1 => Just(ModelTurn::Truncated),
        1 => Just(ModelTurn::Empty),
        1 => Just(ModelTurn::Fail),
        1 => Just(ModelTurn::BadCall),
    ]
}

/// A script of `len` random replies over `tools`.
pub fn script(tools: &[&str], len: Range<usize>) -> impl Strategy<Value = Vec<ModelTurn>> + use<> {
    prop::collection::vec(model_turn(u8::try_from(tools.len()).unwrap_or(u8::MAX)), len)
}

/// Random caps and budgets for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLimits {
    /// `budget.max_turns`.
    pub max_turns: Option<u32>,
    /// `budget.token_budget`.
    pub token_budget: Option<u64>,
    /// `budget.tool_call_budget`.
    pub tool_call_budget: Option<u32>,
    /// The iteration cap (`limits.max_iterations`).
    pub max_iterations: u32,
}

impl RunLimits {
    /// Writes these limits into `config`.
    pub fn apply(&self, config: &mut LoopConfig) {
        config.budget.max_turns = self.max_turns;
        config.budget.token_budget = self.token_budget;
        config.budget.tool_call_budget = self.tool_call_budget;
        config.limits.max_iterations = self.max_iterations;
    }
}

/// Limits small enough that scripts hit them: up to 12 turns, 2,000 tokens, 15 tool calls,
/// 15 iterations, each budget sometimes unset.
pub fn run_limits() -> impl Strategy<Value = RunLimits> {
    (prop::option::of(1u32..12), prop::option::of(100u64..2_000), prop::option::of(1u32..15), 1u32..15)
        .prop_map(|(max_turns, token_budget, tool_call_budget, max_iterations)| RunLimits {
            max_turns,
            token_budget,
            tool_call_budget,
            max_iterations,
        })
}

/// Any JSON value, small: every type, integers across their whole range, strings with quotes,
/// backslashes, newlines and non-ASCII, arrays and objects nested two deep. For property tests
/// of what reads outside input (a request body, a provider's stream, a log) in any shape.
///
/// ```
/// use looprail_loop_core::testkit::strategies::json_value;
/// use proptest::strategy::{Strategy, ValueTree};
///
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let value = json_value().new_tree(&mut runner).unwrap().current();
/// assert!(serde_json::from_str::<serde_json::Value>(&value.to_string()).is_ok());
/// ```
pub fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-z_{}\\[\\]\"\\\\\n é]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A JSON object of the given keys, each there or not (half the time), with a value from its
/// strategy: the shape of an API's message or event with any of its fields missing, for
/// property tests of readers that must treat a missing key as its absence.
///
/// ```
/// use looprail_loop_core::testkit::strategies::json_object;
/// use proptest::prelude::*;
/// use proptest::strategy::ValueTree;
///
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let object = json_object(vec![("role", Just(serde_json::json!("user")).boxed())]);
/// let value = object.new_tree(&mut runner).unwrap().current();
/// assert!(value.as_object().is_some_and(|o| o.keys().all(|k| k == "role")));
/// ```
pub fn json_object(
    fields: Vec<(&'static str, BoxedStrategy<serde_json::Value>)>,
) -> BoxedStrategy<serde_json::Value> {
    let fields: Vec<_> = fields
        .into_iter()
        .map(|(key, value)| proptest::option::of(value).prop_map(move |v| (key, v)))
        .collect();
    fields
        .prop_map(|fields| {
            let present = fields.into_iter().filter_map(|(key, value)| Some((key.to_owned(), value?)));
            serde_json::Value::Object(present.collect())
        })
        .boxed()
}

/// A small JSON value of any kind, the odd ones readers must not take for the expected kind
/// among them: `null`, booleans, small and huge integers, a float, short texts with escapes and
/// non-ASCII, empty and mixed arrays (one of content parts), an object. For the fields of
/// [`json_object`]s, beside each field's usual values.
///
/// ```
/// use looprail_loop_core::testkit::strategies::json_leaf;
/// use proptest::strategy::{Strategy, ValueTree};
///
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let value = json_leaf().new_tree(&mut runner).unwrap().current();
/// assert!(serde_json::from_str::<serde_json::Value>(&value.to_string()).is_ok());
/// ```
pub fn json_leaf() -> BoxedStrategy<serde_json::Value> {
    use serde_json::{Value, json};
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..4).prop_map(Value::from),
        Just(json!(u64::MAX)),
        Just(json!(1.5)),
        "[a-c\"\\\\é\n <>/{}:]{0,6}".prop_map(Value::from),
        Just(json!([])),
        Just(json!(["x", 1])),
        Just(json!([{"type": "text", "text": "p"}, "q", {"text": 3}, {"type": "image"}])),
        Just(json!({"q": "x", "n": [1, 2]})),
    ]
    .boxed()
}
