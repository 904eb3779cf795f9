//! Full jitter: a wait drawn uniformly from `[0, step]`, so clients that failed together do not
//! retry together.

use std::sync::Mutex;
use std::time::Duration;

/// A seedable source of full jitter.
#[derive(Debug)]
pub struct Jitter {
    state: Mutex<u64>,
}

impl Jitter {
    /// Seeded from the clock (a different sequence per process).
    pub fn from_clock() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x5eed, |d| d.as_nanos() as u64);
        Self::seeded(nanos ^ u64::from(std::process::id()))
    }

    /// A fixed sequence (tests, simulations).
    pub fn seeded(seed: u64) -> Self {
        Self { state: Mutex::new(seed) }
    }

    fn next_unit(&self) -> f64 {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A wait in `[0, step]`.
    pub fn full(&self, step: Duration) -> Duration {
        step.mul_f64(self.next_unit())
    }
}
