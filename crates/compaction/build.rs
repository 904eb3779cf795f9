//! Turns the vendored tiktoken vocabulary (`data/cl100k_base.tiktoken.gz`: one base64 token
//! and its rank a line) into the form the counter embeds: every token in rank order, each as
//! one length byte and its bytes. Loading that at run time is a walk over 740 KB, where
//! deserialising a prebuilt encoder cost the audit 55 ms before its first count.

use std::io::Read;

use base64::Engine;

fn main() {
    let source = "data/cl100k_base.tiktoken.gz";
    println!("cargo::rerun-if-changed={source}");
    let compressed = std::fs::read(source).unwrap_or_else(|e| panic!("cannot read {source}: {e}"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(compressed.as_slice())
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{source} is not gzip text: {e}"));
    let mut tokens = Vec::with_capacity(100_256);
    for (line, entry) in text.lines().enumerate() {
        let (encoded, rank) =
            entry.split_once(' ').unwrap_or_else(|| panic!("{source}:{}: not `token rank`", line + 1));
        let token = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap_or_else(|e| panic!("{source}:{}: bad base64: {e}", line + 1));
        let rank: usize = rank.parse().unwrap_or_else(|e| panic!("{source}:{}: bad rank: {e}", line + 1));
        // Ranks are the line numbers: the embedded form keeps only the order.
        assert_eq!(rank, line, "{source}:{}: ranks must count up from 0", line + 1);
        assert!(
            !token.is_empty() && token.len() <= 255,
            "{source}:{}: token of {} bytes",
            line + 1,
            token.len()
        );
        tokens.push(token.len() as u8);
        tokens.extend_from_slice(&token);
    }
    let out = std::env::var("OUT_DIR").unwrap_or_else(|e| panic!("cargo sets OUT_DIR: {e}"));
    let path = std::path::Path::new(&out).join("cl100k_base.tokens");
    std::fs::write(&path, tokens).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
