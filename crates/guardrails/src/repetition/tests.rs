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

/// Content anchors in `text` repeated (its chunks ending in the second copy on).
fn content_anchors(text: &str) -> usize {
    let periodic = text.repeat(3);
    let mut gear = 0u64;
    let shift = 50 - ANCHOR_BITS;
    periodic
        .bytes()
        .enumerate()
        .filter(|&(_, b)| {
            gear = (gear << 1).wrapping_add(GEAR[b as usize]);
            (gear >> shift) & ((1 << ANCHOR_BITS) - 1) == 0
        })
        .filter(|&(i, _)| i >= text.len() && i < 2 * text.len())
        .count()
}

#[test]
fn a_long_block_without_content_anchors_is_found_by_sparse_ones() {
    // Found by the property test below (CI, session 29): 263 bytes (prime, so the blocks' last
    // chunks come back only 16 × 263 bytes later, beyond the longest period) and not one
    // content anchor among its chunks. It used to go unseen however often it was repeated.
    let block = ",AJL Kq3N,.p.3.c2q9o,4.eT kcW1W D 6dSe. e  . w,,O,2NS ,H..B.J pf49 ,Udnw.8Sj2,qcR2 en .e .c3n.8OOnF,,crPTRPj I,.Gp.0,F047.9qAI. ifN3J F.hB q23c. rIE 6i.4tTJw.HH EM. uKT  4  E4Sy FvvF.,s.M.xz,ls706O, ,lC89myjvK....,.yKQyI.,,p.X.SB,.MbwEYi..9KdwH.FahF5Fq. xH..cC.0 ";
    assert_eq!((block.len(), content_anchors(block)), (263, 0));
    let text = format!("#{}", block.repeat(400));
    for piece in [1, 18, 128, 1000] {
        let found = find(&text, piece, false).unwrap_or_else(|| panic!("piece {piece}"));
        assert_eq!((found.period, found.keep), (263, 264), "piece {piece}");
        assert!(found.seen <= 1 + 10 * 263 + piece as u64 + BATCH, "piece {piece}: {found:?}");
    }
}

#[test]
fn anchors_sharing_a_bucket_do_not_evict_each_other() {
    // Found by the property test below: this block's one content anchor and its blocks' last
    // chunk fall in the same bucket (slot 65 of the one-way table it replaced), so each
    // sighting evicted the other and the period was never proposed.
    let prefix = "  a a   a  aa a aaa a  a  aaa  a    a   a a  aa   aa a aaa a ";
    let block = ",jpJxHOM.X4,rd2v";
    let text = format!("{prefix}#{}", block.repeat(400));
    for piece in [1, 18, 128, 1000] {
        let found = find(&text, piece, false).unwrap_or_else(|| panic!("piece {piece}"));
        assert_eq!((found.period, found.keep), (16, prefix.len() as u64 + 1 + 16), "piece {piece}");
    }
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
        // through the blocks' last chunks, up to their least common multiple later, or, when
        // that is beyond the longest period, through the sparse anchors past SPARSE_GAP.
        let needed = ((10 - 1) * found.period as u64).max(10 * 50);
        let lcm = |a: u64, b: u64| a / gcd(a, b) * b;
        let period = found.period as u64;
        let late = if lcm(BLOCK, period) <= 4096 { lcm(BLOCK, period) } else { SPARSE_GAP + period };
        prop_assert!(found.seen <= prefix.len() as u64 + 1 + found.period as u64 + needed + piece as u64 + 128 + late, "{found:?}");
        // What is kept holds one copy at most of the block after the prefix.
        prop_assert!(found.keep as usize <= prefix.len() + 1 + block.len());
        prop_assert!(found.keep as usize > prefix.len(), "the prefix is kept whole");
    }
}
