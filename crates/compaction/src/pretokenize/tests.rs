use proptest::prelude::*;

use super::*;

fn regex_pieces(text: &str) -> Vec<&str> {
    bpe_openai::cl100k_base().split(text).collect()
}

fn ours(text: &str) -> Vec<&str> {
    split_cl100k(text).collect()
}

/// The Unicode path alone, piece after piece (the ASCII path never consulted).
fn unicode_only(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (piece, tail) = rest.split_at(unicode::piece(rest));
        assert!(!piece.is_empty(), "an empty piece at {rest:?}");
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

#[test]
fn awkward_ascii_splits_as_the_regex_does() {
    for text in [
        "",
        "hello world",
        "  leading and trailing  ",
        "a\n\nb\r\n\r\n  c\n  ",
        "I'm sure they'll've been 'quoted' DON'T 'S 'Re 'lL 'x '",
        "12345 67 8 x1y22z333",
        " ((( ))) \n$5.00 #include <stdio.h>\n\tint main() {\n\t\treturn 0;\n}\n",
        "\t\tfoo\x0bbar\x0c \x0b\n",
        "path/to/file.rs:12:5 --flag=value && echo \"done\"\r\n",
        "    \n",
        "x  ",
        "x \t y",
        "trailing'",
        "!!!\n\n\n!!",
    ] {
        assert_eq!(ours(text), regex_pieces(text), "{text:?}");
        assert_eq!(unicode_only(text), regex_pieces(text), "{text:?}");
    }
}

#[test]
fn text_that_is_not_ascii_is_split_by_the_regex_where_it_matters() {
    for text in [
        "café au lait",
        "naïve 'ſ 'K",
        "x\u{a0}\u{a0}y",
        "a \u{85}b",
        "数字²³ 123٣",
        "emoji 🎉🎉 ok",
        "tab\t\u{2003}end",
        "'\u{e9}t\u{e9}",
        " \u{e9}",
        "((\u{e9}",
        "'\u{17f}x 'R\u{e9} \u{17f}'ll",
        "\u{2003}\u{2003}\n\u{2003}x",
        "x\u{2003}\u{2003}",
        "\u{3000}\u{3000}",
        "!!\u{85}",
        "\r\n\u{a0}a",
    ] {
        assert_eq!(ours(text), regex_pieces(text), "{text:?}");
        assert_eq!(unicode_only(text), regex_pieces(text), "{text:?}");
    }
}

proptest! {
    #[test]
    fn random_text_splits_as_the_regex_does(
        parts in prop::collection::vec(
            prop::sample::select(vec![
                "a", "Z", "word", "0", "42", "1234", " ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c",
                "'", "'s", "'re", "'LL", "(", ")", "...", "-", "_", "\"", "é", "\u{a0}", "\u{85}",
                "²", "中", "🎉", "\u{2003}", "ſ",
            ]),
            0..40,
        )
    ) {
        let text: String = parts.concat();
        prop_assert_eq!(ours(&text), regex_pieces(&text));
        prop_assert_eq!(unicode_only(&text), regex_pieces(&text));
    }

    /// Any character at all, among the ones the pattern treats specially.
    #[test]
    fn any_character_splits_as_the_regex_does(
        parts in prop::collection::vec(
            prop_oneof![
                any::<char>().prop_map(String::from),
                prop::sample::select(vec!["'", " ", "\n", "a", "1", "-", "  "]).prop_map(str::to_owned),
            ],
            0..24,
        )
    ) {
        let text: String = parts.concat();
        prop_assert_eq!(ours(&text), regex_pieces(&text));
        prop_assert_eq!(unicode_only(&text), regex_pieces(&text));
    }
}

/// Every character of the Basic Multilingual Plane, and every 16th beyond it, in the contexts
/// where its class decides a cut: after a quote (contractions), between letters, after a space,
/// after digits, and in a run of whitespace before a word.
#[test]
fn characters_across_unicode_split_as_the_regex_does() {
    let chars = (0..0x1_0000u32).chain((0x1_0000..0x11_0000).step_by(16)).filter_map(char::from_u32);
    for c in chars {
        for text in [
            format!("'{c}e x"),
            format!("a{c}b"),
            format!(" {c}{c}1"),
            format!("12{c}3"),
            format!("  {c} x\n{c}"),
            format!("!{c}\n"),
        ] {
            assert_eq!(ours(&text), regex_pieces(&text), "{text:?} (U+{:04X})", u32::from(c));
        }
    }
}

/// The pieces the counter walks: 64 bytes at a time where the text is ASCII.
fn by_blocks(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    for_each_piece(text, &mut |start, end| {
        assert!(start < end, "an empty piece at {start} in {text:?}");
        pieces.push(&text[start..end]);
    });
    pieces
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Texts long enough to cross blocks, from the fragments that decide cuts: runs of spaces
    /// and tabs across block ends, line breaks after punctuation, digit runs, contractions.
    #[test]
    fn blocks_split_as_the_regex_does(
        parts in prop::collection::vec(
            prop::sample::select(vec![
                "a", "Zq", "word", "0", "42", "1234567", " ", "  ", "        ", "\t", "\n", "\r\n",
                "\n\n", "\x0b", "\x0c", "'", "'s", "'re", "'LL", "'ve", "'d", "(", ")", "...", "-",
                "_", "\"", ".\n", "  \n", " \t", "\t ", "x'y", "é", "\u{a0}", "中", "\0",
            ]),
            0..120,
        )
    ) {
        let text: String = parts.concat();
        prop_assert_eq!(by_blocks(&text), regex_pieces(&text));
    }
}

#[test]
fn blocks_split_real_shapes_as_the_regex_does() {
    let code = "fn main() {\n    let x = 1234567;\n    \n\tif x > 3 { println!(\"it's {x}\"); }\n}\n";
    let long_blanks = format!("a{}b\n{}\n  c", " ".repeat(150), "\t".repeat(70));
    let mut texts = vec![code.repeat(5), long_blanks];
    // Blanks after a line break that fill blocks, ended by every kind of byte, at every offset.
    for lead in 0..70 {
        for (width, end) in [(64, "x"), (128, "\n"), (127, "("), (200, ""), (63, "\t\n"), (65, "1")] {
            texts.push(format!("{}\n{}{end}", "a".repeat(lead), " ".repeat(width)));
        }
    }
    // A run of blanks after a line break whose start is also the run's own start (after a
    // line break that punctuation took), carried across a block: counted once, not as an
    // empty piece too.
    texts.push(format!("{})\n{}x", "a".repeat(58), " ".repeat(12)));
    for text in texts.into_iter().chain(["'s".repeat(40), "9".repeat(200), ".\n".repeat(50)]) {
        assert_eq!(by_blocks(&text), regex_pieces(&text), "{text:?}");
    }
}
