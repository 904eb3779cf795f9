//! Wake-ups a task gives itself while it polls, answered by polling again at once.
//!
//! The upstream connection ([`crate::http1_pool`]) is polled by the task that uses it, beside
//! the answer it waits for: hyper's channels between the two (the request handed over, the
//! answer's head, each body piece, the body's "want more" signal) wake the other side, which is
//! the same task. tokio takes a wake-up that arrives while the task runs as a yield: the task
//! goes to the back of the queue and an idle worker thread is woken to share the work (a futex
//! call and a spurious wake-up on the other core), and the task is polled again. On the peers
//! bench that was about six times per request.
//!
//! [`PollRounds::poll`] polls a closure with a waker of its own: a wake-up of that waker from
//! inside the closure, on the polling thread, only marks the round, and the closure is polled
//! again straight away (up to [`MAX_ROUNDS`] times); any other wake-up (the socket being
//! readable, another thread) goes to the task's waker as usual. A marked last round still
//! pending passes its wake-up on to the task, so none is lost.
//!
//! The closure must poll everything that may hold the waker: a wake-up answered by another
//! round reaches only what the closure polls. After a ready result the marks are dropped: the
//! caller polls again when it wants more, and that poll runs the closure (and so everything)
//! again.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

/// The most rounds one poll runs before a wake-up is passed on to the task (hyper's connection
/// and tokio's cooperative budget wake a task on purpose to yield; those still yield).
pub(crate) const MAX_ROUNDS: usize = 4;

thread_local! {
    /// The rounds polling on this thread now, if any (compared by address only).
    static POLLING: Cell<*const Shared> = const { Cell::new(std::ptr::null()) };
}

/// What the waker handed to the closure shares with its [`PollRounds`].
struct Shared {
    /// The waker of the task that polled last.
    task: Mutex<Waker>,
    /// Woken from inside the current round.
    woken: AtomicBool,
}

impl Wake for Shared {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if POLLING.with(Cell::get) == Arc::as_ptr(self) {
            self.woken.store(true, Ordering::Relaxed);
        } else {
            self.task.lock().unwrap_or_else(PoisonError::into_inner).wake_by_ref();
        }
    }
}

/// Polls closures in rounds, answering their own wake-ups by another round (see the module).
pub(crate) struct PollRounds {
    shared: Arc<Shared>,
    /// The waker handed to the closure, made once.
    waker: Waker,
}

impl std::fmt::Debug for PollRounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollRounds").finish_non_exhaustive()
    }
}

impl Default for PollRounds {
    fn default() -> Self {
        let shared =
            Arc::new(Shared { task: Mutex::new(Waker::noop().clone()), woken: AtomicBool::new(false) });
        Self { waker: Waker::from(Arc::clone(&shared)), shared }
    }
}

impl PollRounds {
    /// Polls `poll` until it is ready, or is pending without having woken itself, or
    /// [`MAX_ROUNDS`] rounds ran; wake-ups from elsewhere reach `cx`'s waker.
    pub(crate) fn poll<T>(
        &self,
        cx: &mut Context<'_>,
        mut poll: impl FnMut(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        {
            let mut task = self.shared.task.lock().unwrap_or_else(PoisonError::into_inner);
            if !task.will_wake(cx.waker()) {
                task.clone_from(cx.waker());
            }
        }
        let mut own = Context::from_waker(&self.waker);
        let polling = self.enter();
        let mut rounds = 0;
        let polled = loop {
            self.shared.woken.store(false, Ordering::Relaxed);
            let polled = poll(&mut own);
            rounds += 1;
            if polled.is_ready() || !self.shared.woken.load(Ordering::Relaxed) || rounds == MAX_ROUNDS {
                break polled;
            }
        };
        drop(polling);
        if polled.is_pending() && self.shared.woken.swap(false, Ordering::Relaxed) {
            cx.waker().wake_by_ref();
        }
        polled
    }

    /// Runs `hand_over` (which gives something to what the rounds poll, e.g. a request to the
    /// connection) as part of the next round: its wake-ups are left to the [`poll`](Self::poll)
    /// the caller runs next, as a round's are to the next round.
    pub(crate) fn hand_over<T>(&self, hand_over: impl FnOnce() -> T) -> T {
        let _polling = self.enter();
        hand_over()
    }

    /// Marks these rounds as polling on this thread until the mark drops (also when what runs
    /// meanwhile panics: a stale mark would swallow a later wake-up).
    fn enter(&self) -> Polling {
        Polling(POLLING.with(|polling| polling.replace(Arc::as_ptr(&self.shared))))
    }
}

/// Pending once, having woken its task; ready when polled again. What polls the task acts on
/// the pending first (hyper writes what a body gave), then polls again: at once when polled in
/// rounds (a wake-up from inside a round), else after a yield to the runtime.
pub(crate) fn pending_once() -> impl std::future::Future<Output = ()> {
    let mut waited = false;
    std::future::poll_fn(move |cx| {
        if waited {
            return Poll::Ready(());
        }
        waited = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
}

/// The rounds marked polling before, put back when dropped.
struct Polling(*const Shared);

impl Drop for Polling {
    fn drop(&mut self) {
        POLLING.with(|polling| polling.set(self.0));
    }
}

#[cfg(test)]
#[path = "poll_rounds_tests.rs"]
mod tests;
