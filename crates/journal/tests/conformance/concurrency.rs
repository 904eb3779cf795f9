//! What the database enforces between workers: one active run per lane, one holder per run,
//! one take-over of a stopped holder's run, a fence against the holder that lost it, and
//! reconcilers that may all run at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use looprail_journal::{JournalError, RunSpec, RunStatus, SharedStore, now_ms};
use looprail_loop_core::prelude::*;
use looprail_loop_core::store::CheckpointKind;

use crate::conformance::Backend;

fn spec(run: &str, conversation: &str) -> RunSpec {
    RunSpec::new(run, conversation, "x").with_recipe(serde_json::json!({}))
}

/// Per lane, the run a worker is executing now; per run, how often it was executed.
#[derive(Default)]
struct Ledger {
    active: HashMap<String, String>,
    executed: HashMap<String, u32>,
    order: HashMap<String, Vec<String>>,
}

async fn work(store: SharedStore, ledger: Arc<Mutex<Ledger>>, total: usize) {
    loop {
        if ledger.lock().unwrap().executed.len() == total {
            return;
        }
        let mut next = None;
        for lane in store.due_lanes().await.unwrap() {
            if let Some(run) = store.claim_next(&lane).await.unwrap() {
                next = Some((run, lane));
                break;
            }
        }
        let Some((mut run, lane)) = next else {
            tokio::time::sleep(Duration::from_millis(2)).await;
            continue;
        };
        loop {
            {
                let mut ledger = ledger.lock().unwrap();
                let other = ledger.active.insert(lane.clone(), run.clone());
                assert_eq!(other, None, "two active runs in {lane}");
                *ledger.executed.entry(run.clone()).or_default() += 1;
                ledger.order.entry(lane.clone()).or_default().push(run.clone());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            ledger.lock().unwrap().active.remove(&lane);
            match store.finish(&run, RunStatus::Completed).await.unwrap() {
                Some(following) => run = following,
                None => break,
            }
        }
    }
}

pub async fn concurrent_workers_never_share_a_lane_nor_a_run(backend: Backend) {
    let submitter = backend.open().await;
    let (lanes, per_lane) = (5, 8);
    for i in 0..per_lane {
        for lane in 0..lanes {
            submitter.enqueue(&spec(&format!("l{lane}-r{i}"), &format!("l{lane}"))).await.unwrap();
        }
    }
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut workers = Vec::new();
    for w in 0..4 {
        let store = backend.open_as(&format!("w{w}")).await;
        workers.push(tokio::spawn(work(store, Arc::clone(&ledger), lanes * per_lane)));
    }
    for worker in workers {
        tokio::time::timeout(Duration::from_secs(60), worker).await.expect("the workers finish").unwrap();
    }
    let ledger = std::mem::take(&mut *ledger.lock().unwrap());
    assert!(ledger.executed.values().all(|&n| n == 1), "every run executed once: {:?}", ledger.executed);
    for lane in 0..lanes {
        let expected: Vec<String> = (0..per_lane).map(|i| format!("l{lane}-r{i}")).collect();
        assert_eq!(
            ledger.order[&format!("conversation:l{lane}")],
            expected,
            "submission order in lane {lane}"
        );
    }
    let runs = submitter.runs().await.unwrap();
    assert!(runs.iter().all(|r| r.status == RunStatus::Completed));
}

pub async fn a_stopped_holders_run_is_taken_over_once_and_the_old_holder_is_fenced(backend: Backend) {
    let old = backend.open_as("old").await;
    old.submit(&spec("r", "c")).await.unwrap();
    old.submit(&RunSpec::new("no-recipe", "d", "x")).await.unwrap();
    let run = Run::builder(LoopConfig::default()).user("x").build().unwrap();
    old.save_checkpoint("r", CheckpointKind::LlmResponse, &run.header(), run.messages()).await.unwrap();
    let now = now_ms();
    assert_eq!(old.take_over(now - 60_000, 5).await.unwrap(), None, "a live holder keeps its run");
    old.heartbeat("r", now - 600_000).await.unwrap();
    old.heartbeat("no-recipe", now - 600_000).await.unwrap();

    let mut takers = Vec::new();
    for w in 0..4 {
        let store = backend.open_as(&format!("new{w}")).await;
        takers.push(tokio::spawn(async move { (store.take_over(now - 60_000, 5).await.unwrap(), store) }));
    }
    let mut winners = Vec::new();
    for taker in takers {
        if let (Some(run), store) = taker.await.unwrap() {
            winners.push((run, store));
        }
    }
    assert_eq!(winners.len(), 1, "one taker wins; a run without a recipe is not taken");
    let (taken, new) = winners.pop().unwrap();
    assert_eq!(taken, "r");
    let row = old.run("r").await.unwrap().unwrap();
    assert_eq!(
        (row.status, row.worker.as_deref(), row.takeovers),
        (RunStatus::Running, Some(new.worker()), 1)
    );

    // The old holder, back from a network cut, is fenced off.
    assert!(!old.heartbeat("r", now_ms()).await.unwrap(), "its lease is lost");
    let call = ToolCall::new("lr-0", "send", "{}");
    assert!(matches!(old.start_tool_call("r", &call).await, Err(JournalError::LeaseLost { .. })));
    let refused = old.save_checkpoint("r", CheckpointKind::ToolResult, &run.header(), run.messages()).await;
    assert!(matches!(refused, Err(JournalError::LeaseLost { .. })), "{refused:?}");
    new.start_tool_call("r", &call).await.unwrap();
    assert!(new.heartbeat("r", now_ms()).await.unwrap());

    // A shutdown's interrupted run is taken over too, at most `max_takeovers` times in all.
    new.set_status("r", RunStatus::Interrupted).await.unwrap();
    assert_eq!(old.take_over(now_ms() - 60_000, 1).await.unwrap(), None, "already taken over once");
    assert_eq!(old.take_over(now_ms() - 60_000, 5).await.unwrap().as_deref(), Some("r"));
    let row = old.run("r").await.unwrap().unwrap();
    assert_eq!((row.worker.as_deref(), row.takeovers, row.resume_available), (Some("old"), 2, false));
}

pub async fn concurrent_reconcilers_count_each_run_once(backend: Backend) {
    let store = backend.open().await;
    let now = now_ms();
    // Each crashed after a resumable checkpoint (the reconciler times such runs out).
    let run = Run::builder(LoopConfig::default()).user("x").build().unwrap();
    for i in 0..10 {
        let id = format!("r{i}");
        store.submit(&spec(&id, &id)).await.unwrap();
        store.save_checkpoint(&id, CheckpointKind::LlmResponse, &run.header(), run.messages()).await.unwrap();
        store.heartbeat(&id, now - 600_000).await.unwrap();
    }
    let mut passes = Vec::new();
    for w in 0..4 {
        let store = backend.open_as(&format!("rec{w}")).await;
        passes.push(tokio::spawn(async move {
            store.reconcile(now, Duration::from_secs(60), Duration::from_secs(60)).await.unwrap().timed_out
        }));
    }
    let mut total = 0;
    for pass in passes {
        total += pass.await.unwrap();
    }
    assert_eq!(total, 10, "each stale run timed out by exactly one reconciler");
    assert!(store.runs().await.unwrap().iter().all(|r| r.status == RunStatus::TimedOut));
}

/// Documents several processes update (the gateway's conversation states) are swapped only
/// while they are as read: 40 writers at once, each reading, adding one and swapping (reading
/// again when another got there first), lose no update.
pub async fn swapped_documents_lose_no_concurrent_update(backend: Backend) {
    let store = backend.open().await;
    let doc = |n: u64| serde_json::json!({"id": "c", "requests": n, "note": "a \"quoted\" é"});
    assert!(store.swap_journal("k", None, &doc(0)).await.unwrap(), "absent: inserted");
    assert!(!store.swap_journal("k", None, &doc(9)).await.unwrap(), "present: not inserted again");
    assert!(!store.swap_journal("k", Some(&doc(5)), &doc(9)).await.unwrap(), "not as expected");
    assert_eq!(store.load_journal("k").await.unwrap(), Some(doc(0)));
    let mut writers = Vec::new();
    for _ in 0..40 {
        let store = store.clone();
        writers.push(tokio::spawn(async move {
            loop {
                let read = store.load_journal("k").await.unwrap().unwrap();
                let next = doc(read["requests"].as_u64().unwrap() + 1);
                if store.swap_journal("k", Some(&read), &next).await.unwrap() {
                    return;
                }
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(store.load_journal("k").await.unwrap(), Some(doc(40)));
}

/// The state's swap and the fingerprints written with it in one statement: the swap succeeds
/// only while the document is as read, the other documents are stored either way, and 40
/// writers at once lose no update.
pub async fn a_swap_with_documents_beside_it_loses_no_concurrent_update(backend: Backend) {
    let store = backend.open().await;
    let doc = |n: u64| serde_json::json!({"id": "c", "requests": n, "note": "a \"quoted\" é"});
    let beside =
        move |n: u64| vec![(format!("p/{n}"), serde_json::json!({"id": "c"})), (format!("q/{n}"), doc(n))];
    assert!(store.swap_journal_saving("k", None, &doc(0), &beside(0)).await.unwrap(), "absent: inserted");
    assert!(!store.swap_journal_saving("k", None, &doc(9), &beside(1)).await.unwrap(), "present");
    assert!(
        !store.swap_journal_saving("k", Some(&doc(5)), &doc(9), &beside(2)).await.unwrap(),
        "not as read"
    );
    assert_eq!(store.load_journal("k").await.unwrap(), Some(doc(0)), "a failed swap writes no state");
    for n in 0..3 {
        assert_eq!(store.load_journal(&format!("q/{n}")).await.unwrap(), Some(doc(n)), "stored either way");
    }
    assert!(
        store.swap_journal_saving("k", Some(&doc(0)), &doc(1), &[]).await.unwrap(),
        "as read, none beside"
    );
    let mut writers = Vec::new();
    for w in 0..40u64 {
        let store = store.clone();
        writers.push(tokio::spawn(async move {
            loop {
                let read = store.load_journal("k").await.unwrap().unwrap();
                let next = doc(read["requests"].as_u64().unwrap() + 1);
                if store.swap_journal_saving("k", Some(&read), &next, &beside(100 + w)).await.unwrap() {
                    return;
                }
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(store.load_journal("k").await.unwrap(), Some(doc(41)));
    let keys: Vec<String> = (100..140).map(|n| format!("p/{n}")).collect();
    assert_eq!(store.load_journals(&keys).await.unwrap().len(), 40);
}

/// Swaps grouped in one call (SQLite: one transaction) answer each on its own, store every
/// document beside them either way (past one statement's bound values too), and 20 writers
/// grouping swaps of two documents at once lose no update of either.
pub async fn grouped_swaps_answer_each_and_lose_no_concurrent_update(backend: Backend) {
    use looprail_journal::JournalSwap;
    let store = backend.open().await;
    let doc = |n: u64| serde_json::json!({"requests": n});
    store.save_journal("a", &doc(0)).await.unwrap();
    store.save_journal("c", &doc(3)).await.unwrap();
    let small = vec![("p/a".to_owned(), doc(1))];
    let many: Vec<(String, serde_json::Value)> = (0..700).map(|n| (format!("m/{n}"), doc(n))).collect();
    let stale = vec![("p/c".to_owned(), doc(2))];
    let (one, seven, four) = (doc(1), doc(7), doc(4));
    let (zero, nine) = (doc(0), doc(9));
    let swaps = [
        JournalSwap { key: "a", expected: Some(&zero), body: &one, entries: &small },
        JournalSwap { key: "b", expected: None, body: &seven, entries: &many },
        JournalSwap { key: "c", expected: Some(&nine), body: &four, entries: &stale },
    ];
    assert_eq!(store.swap_journals_saving(&swaps).await.unwrap(), vec![true, true, false]);
    assert_eq!(store.load_journal("a").await.unwrap(), Some(doc(1)));
    assert_eq!(store.load_journal("b").await.unwrap(), Some(doc(7)));
    assert_eq!(store.load_journal("c").await.unwrap(), Some(doc(3)), "a stale swap writes no state");
    assert_eq!(store.load_journal("p/c").await.unwrap(), Some(doc(2)), "stored either way");
    assert_eq!(store.load_journal("m/699").await.unwrap(), Some(doc(699)));
    assert_eq!(store.swap_journals_saving(&[]).await.unwrap(), Vec::<bool>::new());
    let mut writers = Vec::new();
    for _ in 0..20 {
        let store = store.clone();
        writers.push(tokio::spawn(async move {
            let mut left = vec!["x", "y"];
            while !left.is_empty() {
                let mut read = Vec::new();
                for key in &left {
                    read.push(store.load_journal(key).await.unwrap());
                }
                let next: Vec<serde_json::Value> = read
                    .iter()
                    .map(|r| doc(r.as_ref().map_or(0, |d| d["requests"].as_u64().unwrap()) + 1))
                    .collect();
                let swaps: Vec<JournalSwap<'_>> = left
                    .iter()
                    .zip(&read)
                    .zip(&next)
                    .map(|((key, read), next)| JournalSwap {
                        key,
                        expected: read.as_ref(),
                        body: next,
                        entries: &[],
                    })
                    .collect();
                let done = store.swap_journals_saving(&swaps).await.unwrap();
                left =
                    left.into_iter().zip(done).filter(|(_, swapped)| !swapped).map(|(key, _)| key).collect();
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(store.load_journal("x").await.unwrap(), Some(doc(20)));
    assert_eq!(store.load_journal("y").await.unwrap(), Some(doc(20)));
}
