//! Shared helpers for the end-to-end scenario tests in `tests/tests/`.
