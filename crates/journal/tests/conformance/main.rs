//! The run store's conformance suite: every test here runs against both backends, a SQLite
//! file and a real PostgreSQL server started by the tests (`looprail-testkit-postgres`), and
//! must behave the same on each: lanes, claims and take-overs under concurrency, checkpoints,
//! the envelope, the reconciler, journals, and runs driven, crashed, resumed and answered
//! through the [`Runner`](looprail_journal::Runner).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod backend;
mod concurrency;
mod runs;
mod storage;

pub use backend::Backend;

/// Instantiates each named `async fn(Backend)` once per backend, as `sqlite::<name>` and
/// `postgres::<name>`.
macro_rules! conformance {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::conformance::$module::$name(crate::conformance::Backend::sqlite(stringify!($name))).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(backend) = crate::conformance::Backend::postgres(stringify!($name)).await else { return };
                    crate::conformance::$module::$name(backend).await;
                }
            )*
        }
    };
}

conformance!(
    storage::runs_lanes_and_statuses,
    storage::checkpoints_store_only_new_messages_and_survive_rewrites,
    storage::the_envelope_records_starts_results_and_human_verdicts,
    storage::journals_are_kept_per_conversation,
    storage::the_reconciler_times_out_stale_runs_and_cancels_expired_waits,
    concurrency::concurrent_workers_never_share_a_lane_nor_a_run,
    concurrency::a_stopped_holders_run_is_taken_over_once_and_the_old_holder_is_fenced,
    concurrency::concurrent_reconcilers_count_each_run_once,
    concurrency::swapped_documents_lose_no_concurrent_update,
    concurrency::a_swap_with_documents_beside_it_loses_no_concurrent_update,
    concurrency::grouped_swaps_answer_each_and_lose_no_concurrent_update,
    runs::a_run_is_driven_to_its_end_through_the_envelope,
    runs::a_crash_inside_a_side_effect_is_taken_over_and_halts_for_a_human,
    runs::a_question_is_answered_from_another_process,
    runs::a_finished_run_taken_over_is_closed_not_rerun,
);
