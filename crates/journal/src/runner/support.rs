//! Small adapters of the runner: a heartbeat task aborted with its run, and a boxed context
//! policy usable where the engine's builder wants a concrete one.

use looprail_loop_core::context::ContextPolicy;

/// Aborts a spawned task when dropped.
pub(super) struct AbortOnDrop(pub(super) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Adapts a boxed policy to the builder's `impl ContextPolicy`.
pub(super) struct PolicyBox(pub(super) Box<dyn ContextPolicy>);

impl ContextPolicy for PolicyBox {
    fn prepare(
        &mut self,
        messages: &mut Vec<looprail_loop_core::message::Message>,
        view: &looprail_loop_core::context::ContextView<'_>,
    ) -> looprail_loop_core::context::ContextStep {
        self.0.prepare(messages, view)
    }
    fn apply_summary(
        &mut self,
        messages: &mut Vec<looprail_loop_core::message::Message>,
        summary: Result<String, String>,
        view: &looprail_loop_core::context::ContextView<'_>,
    ) -> Vec<looprail_loop_core::guard::Decision> {
        self.0.apply_summary(messages, summary, view)
    }
    fn on_overflow(
        &mut self,
        messages: &mut Vec<looprail_loop_core::message::Message>,
        view: &looprail_loop_core::context::ContextView<'_>,
    ) -> looprail_loop_core::context::ContextStep {
        self.0.on_overflow(messages, view)
    }
    fn on_user_turn(&mut self) {
        self.0.on_user_turn();
    }
    fn estimate_usage(
        &mut self,
        sent: &[looprail_loop_core::message::Message],
        reply: &looprail_loop_core::provider::ModelResponse,
    ) -> looprail_loop_core::provider::Usage {
        self.0.estimate_usage(sent, reply)
    }
    fn save_state(&self) -> serde_json::Value {
        self.0.save_state()
    }
    fn load_state(
        &mut self,
        state: serde_json::Value,
    ) -> Result<(), looprail_loop_core::guard::GuardStateError> {
        self.0.load_state(state)
    }
}
