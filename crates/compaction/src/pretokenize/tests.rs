use proptest::prelude::*;

use super::*;

fn regex_pieces(text: &str) -> Vec<&str> {
    bpe_openai::cl100k_base().split(text).collect()
}

fn ours(text: &str) -> Vec<&str> {
    split_cl100k(text, |rest| bpe_openai::cl100k_base().split(rest).next()).collect()
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
    ] {
        assert_eq!(ours(text), regex_pieces(text), "{text:?}");
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
    }
}
