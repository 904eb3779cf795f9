use super::*;
use proptest::prelude::*;

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn find(text: &str, piece: usize, arguments: bool) -> Option<Repetition> {
    let mut detector = RepetitionDetector::new(&RepetitionConfig::default(), arguments);
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + piece).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        if let Some(found) = detector.feed(&text[start..end]) {
            return Some(found);
        }
        start = end;
    }
    detector.finish()
}

#[test]
fn a_block_repeated_is_found_within_ten_copies_whatever_the_pieces() {
    // 200 characters with no period of their own.
    let block: String =
        (0..200u64).map(|i| (b'a' + (i.wrapping_mul(0x9e37_79b9) >> 7) as u8 % 26) as char).collect();
    let intro = "Intro text that is not repeated at all, and a bit more. ";
    let text = format!("{intro}{}", block.repeat(100));
    for piece in [1, 7, 64, 1000, 100_000] {
        let found = find(&text, piece, false).unwrap_or_else(|| panic!("piece {piece}"));
        assert_eq!(found.period, 200, "piece {piece}");
        if piece < 1000 {
            // Ten copies, the piece in flight and at most one batch of 128 bytes.
            assert!(found.seen <= (intro.len() + 10 * 200 + piece + 128) as u64, "piece {piece}: {found:?}");
        }
        assert_eq!(&text[..found.keep as usize], &text[..intro.len() + 200], "one copy kept");
    }
}

#[test]
fn short_periods_need_the_minimum_length() {
    // A divider of 80 dashes, or forty spaces, is not degenerate; 600 are.
    let divider = format!("Title\n{}\nText after the divider.\n", "-".repeat(80));
    assert_eq!(find(&divider, 16, false), None);
    let spaces = format!("ok{}", " ".repeat(600));
    let found = find(&spaces, 16, false).unwrap();
    assert_eq!((found.period, found.keep), (1, 3));
}

#[test]
fn unicode_is_cut_on_a_character_boundary() {
    let text = format!("Résumé: {}", "ça marche très bien, n'est-ce pas ? ".repeat(40));
    let found = find(&text, 5, false).unwrap();
    let keep = floor_boundary(&text, found.keep);
    assert!(text.is_char_boundary(keep));
    assert!(text[..keep].starts_with("Résumé: ça marche"));
}

#[test]
fn ordinary_documents_never_trigger_it() {
    // A table with many similar rows, a list, code with repeated shapes, a refrain.
    let mut doc = String::from("| id | status | owner |\n|---|---|---|\n");
    for i in 0..200 {
        doc.push_str(&format!("| {i} | pending | team-{} |\n", i % 7));
    }
    for i in 0..100 {
        doc.push_str(&format!("- item {i}: check the configuration of module {i}\n"));
    }
    doc.push_str("```rust\n");
    for i in 0..100 {
        doc.push_str(&format!("    assert_eq!(parse(\"{i}\"), Ok({i}));\n"));
    }
    doc.push_str("```\n");
    for verse in 0..12 {
        doc.push_str(&format!("Verse {verse} tells a story of its own, line after line.\nAnd the refrain comes back, the same as before.\n"));
    }
    for piece in [3, 40, 4096] {
        assert_eq!(find(&doc, piece, false), None, "piece {piece}");
    }
}

#[test]
fn code_blocks_and_arguments_need_more_repeats() {
    let line = "    zeros = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n";
    let code = format!("```python\n{}```\n", line.repeat(12));
    assert_eq!(find(&code, 32, false), None, "12 identical lines in a code block");
    let prose = line.repeat(12);
    assert!(find(&prose, 32, false).is_some(), "the same outside a code block");
    assert_eq!(find(&prose, 32, true), None, "or in a tool's arguments");
    assert!(find(&line.repeat(60), 32, true).is_some(), "60 of them in arguments");
}

proptest! {
    /// Text made of many distinct words never triggers it.
    #[test]
    fn distinct_text_never_triggers(words in prop::collection::vec("[a-z]{2,9}", 10..400), piece in 1usize..200) {
        let text = words.iter().enumerate().map(|(i, w)| format!("{w}{i} ")).collect::<String>();
        prop_assert_eq!(find(&text, piece, false), None);
    }

    /// Any block (long enough) repeated many times is found, within its 10th copy plus the piece
    /// in flight, and cut after its first copy.
    #[test]
    fn any_repeated_block_is_found(
        prefix in "[a-z ]{0,80}",
        block in "[a-zA-Z0-9 .,]{5,300}",
        piece in 1usize..300,
    ) {
        // Enough copies for the late path too (a block's last chunk back after the least
        // common multiple of 16 and the block's length).
        let copies = 10 + 500 / block.len() + 2 * 16;
        let text = format!("{prefix}#{}", block.repeat(copies));
        let found = find(&text, piece, false);
        prop_assert!(found.is_some());
        let found = found.unwrap();
        // Found within ten copies (500 bytes at least), plus the piece in flight and a batch;
        // a block none of whose chunks is a content anchor (rare for long blocks) is found
        // through the blocks' last chunks, up to their least common multiple later.
        let needed = ((10 - 1) * found.period as u64).max(10 * 50);
        let lcm = |a: u64, b: u64| a / gcd(a, b) * b;
        let late = lcm(16, found.period as u64);
        prop_assert!(found.seen <= prefix.len() as u64 + 1 + found.period as u64 + needed + piece as u64 + 128 + late, "{found:?}");
        // What is kept holds one copy at most of the block after the prefix.
        prop_assert!(found.keep as usize <= prefix.len() + 1 + block.len());
        prop_assert!(found.keep as usize > prefix.len(), "the prefix is kept whole");
    }
}
