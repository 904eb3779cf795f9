//! Loop detection and the escalation ladder for looprail agent loops.
//!
//! **Status: skeleton.** This crate will hold every detector of FEATURES.md F15–F20 and B1–B4 as
//! [`looprail_loop_core::guard::Guard`] implementations: consecutive identical steps, windowed
//! thrash, the per-executor repeat counter, alternating cycles, consecutive tool errors, and the
//! escalation ladder (nudge → directive → forced `ask_human`). It is tracked by issue 5; nothing
//! here is implemented yet, so the crate exports nothing.
