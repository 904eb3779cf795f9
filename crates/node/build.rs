//! The link arguments a Node addon needs (its N-API symbols come from the process that loads it).

fn main() {
    napi_build::setup();
}
