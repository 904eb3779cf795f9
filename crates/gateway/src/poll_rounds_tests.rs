//! Tests of answering a task's own wake-ups by another round.

use std::sync::atomic::AtomicUsize;

use proptest::prelude::*;

use super::*;

/// A task's waker counting its wake-ups.
#[derive(Default)]
struct Task(AtomicUsize);

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn task() -> (Arc<Task>, Waker) {
    let task = Arc::new(Task::default());
    (Arc::clone(&task), Waker::from(task))
}

fn woken(task: &Task) -> usize {
    task.0.load(Ordering::SeqCst)
}

/// Polls `rounds` once as task `waker`, pending, keeping the waker the rounds hand out (as
/// hyper's connection keeps it to wake when it has something).
fn kept_waker(rounds: &PollRounds, waker: &Waker) -> Waker {
    let mut kept = None;
    let polled: Poll<()> = rounds.poll(&mut Context::from_waker(waker), |cx| {
        kept = Some(cx.waker().clone());
        Poll::Pending
    });
    assert!(polled.is_pending());
    kept.expect("the closure kept its waker")
}

#[test]
fn a_wake_from_inside_a_round_is_answered_by_another_round_not_by_the_task() {
    let (task, waker) = task();
    let rounds = PollRounds::default();
    let mut calls = 0;
    let polled = rounds.poll(&mut Context::from_waker(&waker), |cx| {
        calls += 1;
        if calls == 1 {
            // What hyper's channel does when the connection hands over the answer.
            cx.waker().wake_by_ref();
            Poll::Pending
        } else {
            Poll::Ready(calls)
        }
    });
    assert_eq!(polled, Poll::Ready(2));
    assert_eq!(woken(&task), 0);
}

#[test]
fn a_pending_round_that_did_not_wake_itself_ends_the_poll() {
    let (task, waker) = task();
    let mut calls = 0;
    let polled: Poll<()> = PollRounds::default().poll(&mut Context::from_waker(&waker), |_| {
        calls += 1;
        Poll::Pending
    });
    assert!(polled.is_pending());
    assert_eq!((calls, woken(&task)), (1, 0));
}

#[test]
fn a_closure_waking_itself_every_round_yields_to_the_task_after_the_last() {
    let (task, waker) = task();
    let mut calls = 0;
    let polled: Poll<()> = PollRounds::default().poll(&mut Context::from_waker(&waker), |cx| {
        calls += 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    });
    assert!(polled.is_pending());
    assert_eq!((calls, woken(&task)), (MAX_ROUNDS, 1));
}

#[test]
fn a_wake_after_the_poll_reaches_the_task_that_polled_last_from_any_thread() {
    let (first, first_waker) = task();
    let (last, last_waker) = task();
    let rounds = PollRounds::default();
    kept_waker(&rounds, &first_waker);
    let kept = kept_waker(&rounds, &last_waker);
    kept.wake_by_ref();
    assert_eq!((woken(&first), woken(&last)), (0, 1));
    std::thread::spawn(move || kept.wake()).join().expect("waking thread");
    assert_eq!((woken(&first), woken(&last)), (0, 2));
}

#[test]
fn a_wake_from_another_thread_while_a_round_runs_reaches_the_task() {
    let (task, waker) = task();
    let polled: Poll<()> = PollRounds::default().poll(&mut Context::from_waker(&waker), |cx| {
        let own = cx.waker().clone();
        std::thread::spawn(move || own.wake()).join().expect("waking thread");
        Poll::Pending
    });
    assert!(polled.is_pending());
    assert_eq!(woken(&task), 1);
}

#[test]
fn a_wake_from_a_hand_over_is_left_to_the_next_poll() {
    let (task, waker) = task();
    let rounds = PollRounds::default();
    let kept = kept_waker(&rounds, &waker);
    let mut handed = false;
    // What handing a request to the connection does: the connection's kept waker fires.
    rounds.hand_over(|| kept.wake_by_ref());
    assert_eq!(woken(&task), 0);
    let polled = rounds.poll(&mut Context::from_waker(&waker), |_| {
        handed = true;
        Poll::Ready(())
    });
    assert!(polled.is_ready() && handed);
    // Outside a hand-over or a round, the kept waker reaches the task again.
    kept.wake();
    assert_eq!(woken(&task), 1);
}

#[test]
fn a_round_that_panics_leaves_no_mark_behind() {
    let (task, waker) = task();
    let rounds = PollRounds::default();
    let kept = kept_waker(&rounds, &waker);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _: Poll<()> = rounds.poll(&mut Context::from_waker(&waker), |_| panic!("a round panics"));
    }));
    assert!(panicked.is_err());
    kept.wake();
    assert_eq!(woken(&task), 1, "the wake-up after the panic was taken for a round's");
}

proptest! {
    /// However many times a closure wakes itself before it is ready, polling it as a task
    /// would (again only after a wake-up) reaches its result: every pending result left exactly
    /// one wake-up for the task, a ready one none, and the closure ran once per wake-up plus once.
    #[test]
    fn every_pending_result_leaves_one_wake_up_and_none_is_lost(own_wakes in 0usize..20) {
        let (task, waker) = task();
        let rounds = PollRounds::default();
        let mut calls = 0;
        let mut pending = 0;
        loop {
            let before = woken(&task);
            let polled = rounds.poll(&mut Context::from_waker(&waker), |cx| {
                calls += 1;
                if calls <= own_wakes {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            });
            if polled.is_ready() {
                prop_assert_eq!(woken(&task), before);
                break;
            }
            pending += 1;
            prop_assert_eq!(woken(&task), before + 1, "a pending poll left no wake-up");
        }
        prop_assert_eq!(calls, own_wakes + 1);
        prop_assert_eq!(pending, own_wakes / MAX_ROUNDS);
    }
}

#[test]
fn pending_once_is_answered_by_another_round_and_outside_rounds_wakes_the_task() {
    let (task, waker) = task();
    let rounds = PollRounds::default();
    let mut once = std::pin::pin!(pending_once());
    let mut calls = 0;
    let polled = rounds.poll(&mut Context::from_waker(&waker), |cx| {
        calls += 1;
        once.as_mut().poll(cx)
    });
    assert_eq!((polled, calls, woken(&task)), (Poll::Ready(()), 2, 0));
    // Polled by a task itself, it wakes the task to be polled again.
    let mut once = std::pin::pin!(pending_once());
    assert!(once.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    assert_eq!(woken(&task), 1);
    assert!(once.as_mut().poll(&mut Context::from_waker(&waker)).is_ready());
}
