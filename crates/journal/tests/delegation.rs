//! Delegation through the runner (F2, F37): a child run one level deeper, in its own lane,
//! with a carved budget, whose answer is the parent's tool result; cancelling the parent
//! cancels the child.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::temp_db;
use looprail_journal::RunStore as _;
use looprail_journal::{DELEGATE_TOOL, DelegationConfig, RunSpec, RunStatus, Runner, SqliteStore, Started};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::RecordingTool;

/// The parent delegates once and then answers with what it got; a child (its task starts with
/// "SUB:") answers at once, or never when `child_hangs`.
struct Family {
    child_hangs: bool,
}

#[async_trait]
impl Provider for Family {
    fn model(&self) -> &str {
        "family"
    }
    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let first_user =
            request.messages.iter().find(|m| m.role == Role::User).and_then(Message::joined_text);
        if first_user.as_deref().is_some_and(|t| t.starts_with("SUB:")) {
            if self.child_hangs {
                std::future::pending::<()>().await;
            }
            return Ok(ModelResponse::text("family", "child: the answer is 42").with_usage(10, 5));
        }
        let result = request.messages.iter().flat_map(Message::tool_results).next();
        Ok(match result {
            None => ModelResponse::tool_calls(
                "family",
                vec![ToolCall::new("d1", DELEGATE_TOOL, r#"{"task": "SUB: find the answer"}"#)],
            ),
            Some(result) => ModelResponse::text("family", format!("parent got: {}", result.content)),
        }
        .with_usage(10, 5))
    }
}

fn runner(store: &SqliteStore, child_hangs: bool, max_depth: u32) -> Runner {
    let mut config = LoopConfig::default();
    config.budget.tool_call_budget = Some(10);
    config.limits.max_delegation_depth = max_depth;
    Runner::new(
        store.clone(),
        Arc::new(Family { child_hangs }),
        ToolSet::new().with(RecordingTool::new("noop")),
        "sys",
    )
    .with_config(config)
    .with_heartbeat(Duration::from_millis(20))
    .with_delegation(DelegationConfig { enabled: true, budget_share: 0.5 })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_run_answers_the_parent_from_its_own_lane_with_a_carved_budget() {
    let path = temp_db("delegate");
    let store = SqliteStore::open(&path).await.unwrap();
    let Started::Ran(outcome) =
        runner(&store, false, 1).start(&RunSpec::new("p", "c", "Find it")).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(outcome.state, RunState::Completed, "{:?}", outcome.stop);
    assert_eq!(outcome.final_text, "parent got: child: the answer is 42");
    let children: Vec<_> =
        store.runs().await.unwrap().into_iter().filter(|r| r.parent_run_id.as_deref() == Some("p")).collect();
    assert_eq!(children.len(), 1);
    let child = &children[0];
    assert_eq!((child.depth, child.status), (1, RunStatus::Completed));
    assert_eq!(child.lane, format!("conversation:{}", child.run_id));
    let header = store.latest_checkpoint(&child.run_id).await.unwrap().unwrap().header;
    // The parent had used 1 of its 10 tool calls when it delegated: the child gets half of 9.
    assert_eq!(header.core.config.budget.tool_call_budget, Some(4));
    // At the depth cap the child is not offered the tool at all.
    assert!(header.core.tools.iter().all(|t| t.name != DELEGATE_TOOL));
    let parent_tools = store.latest_checkpoint("p").await.unwrap().unwrap().header.core.tools;
    assert!(parent_tools.iter().any(|t| t.name == DELEGATE_TOOL));
    let _ = std::fs::remove_file(path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_cancels_its_child() {
    let path = temp_db("delegate-cancel");
    let store = SqliteStore::open(&path).await.unwrap();
    let parent = runner(&store, true, 3);
    let task = tokio::spawn(async move { parent.start(&RunSpec::new("p", "c", "Find it")).await });
    // Wait for the child to exist, then cancel the parent.
    for _ in 0..200 {
        if store.runs().await.unwrap().iter().any(|r| r.parent_run_id.as_deref() == Some("p")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    store.request_cancel("p", looprail_journal::now_ms()).await.unwrap();
    let Started::Ran(outcome) =
        tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap().unwrap()
    else {
        panic!()
    };
    assert_eq!(outcome.state, RunState::Cancelled);
    let runs = store.runs().await.unwrap();
    let child = runs.iter().find(|r| r.parent_run_id.as_deref() == Some("p")).unwrap();
    assert_eq!(child.status, RunStatus::Cancelled);
    assert_eq!(store.run("p").await.unwrap().unwrap().status, RunStatus::Cancelled);
    let _ = std::fs::remove_file(path);
}
