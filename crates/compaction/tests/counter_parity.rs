//! The counter gives tiktoken's exact counts (issue 16): checked against tiktoken-rs on awkward
//! fixed texts, on random Unicode, on long texts of mixed pieces, and from several threads at
//! once (they share what they merged).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_compaction::{Encoding, TiktokenCounter};
use looprail_loop_core::context::TokenCounter;
use proptest::prelude::*;

fn reference(encoding: Encoding, text: &str) -> u64 {
    let bpe = match encoding {
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
    };
    bpe.count_ordinary(text) as u64
}

const AWKWARD: &[&str] = &[
    "",
    " ",
    "\n\n\n   \t\r\n",
    "hello world",
    "fn main() {\n    println!(\"{}\", 42);\n}\n",
    "diff --git a/src/lib.rs b/src/lib.rs\n@@ -1,4 +1,5 @@\n-    let x = 1;\n+    let x = 2;\n",
    "Traceback (most recent call last):\n  File \"/usr/lib/python3.11/x.py\", line 12, in <module>\nKeyError: 'id'",
    "Ünïcödé façade naïve café — “quotes” ‘and’ … ellipsis",
    "日本語のテキストと中文文本와 한국어",
    "emoji 👍🏽 family 👨‍👩‍👧‍👦 flags 🇪🇺",
    "0x7f3a9c 1234567890 3.14159e-10 2026-11-22T10:00:00Z",
    "{\"key\": [1, 2, {\"nested\": null}], \"s\": \"a\\nb\"}",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "'s 't 're 've 'm 'll 'd ?!.,;: ___ ---- ====",
];

#[test]
fn awkward_texts_count_as_tiktoken_counts_them() {
    for encoding in [Encoding::Cl100kBase, Encoding::O200kBase] {
        let counter = TiktokenCounter::new(encoding);
        for text in AWKWARD {
            assert_eq!(counter.count_text(text), reference(encoding, text), "{encoding:?}: {text:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_unicode_counts_as_tiktoken_counts_it(text in "\\PC{0,200}", ascii in "[ -~\\n\\t]{0,300}") {
        for encoding in [Encoding::Cl100kBase, Encoding::O200kBase] {
            let counter = TiktokenCounter::new(encoding);
            prop_assert_eq!(counter.count_text(&text), reference(encoding, &text));
            prop_assert_eq!(counter.count_text(&ascii), reference(encoding, &ascii));
        }
    }
}

/// Texts of many multi-token pieces (identifiers, runs of punctuation and spaces, numbers),
/// long enough to cross the 64-byte blocks and fill the caches.
fn mixed_text(seed: u64, len: usize) -> String {
    const PARTS: &[&str] = &[
        " ValidationError",
        "_objs",
        " comprehensively",
        "====",
        "    ",
        "\t\t",
        "\n",
        "12345",
        "'re",
        " x",
        "(",
        ")",
        "::",
        "Über",
        "ß",
        " naïve",
        "getattr",
        "__init__",
        "0xdeadbeef",
        "-----",
        "\r\n",
        " the",
        "ing",
        "é",
        "🎉",
    ];
    let mut state = seed | 1;
    let mut text = String::new();
    while text.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text.push_str(PARTS[(state % PARTS.len() as u64) as usize]);
    }
    text
}

#[test]
fn long_mixed_texts_count_as_tiktoken_counts_them() {
    let counter = TiktokenCounter::default();
    for seed in 0..40 {
        let text = mixed_text(seed, 5_000);
        assert_eq!(counter.count_text(&text), reference(Encoding::Cl100kBase, &text), "seed {seed}");
    }
}

#[test]
fn threads_counting_at_once_agree_with_tiktoken() {
    // Eight threads count overlapping texts at the same time: each merges pieces the others
    // may be merging, and reads counts the others stored.
    let texts: Vec<String> = (0..64).map(|seed| mixed_text(seed % 16, 3_000)).collect();
    std::thread::scope(|scope| {
        for offset in 0..8 {
            let texts = &texts;
            scope.spawn(move || {
                let counter = TiktokenCounter::default();
                for text in texts.iter().cycle().skip(offset * 8).take(64) {
                    assert_eq!(counter.count_text(text), reference(Encoding::Cl100kBase, text));
                }
            });
        }
    });
}
