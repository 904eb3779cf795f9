use super::canonical::{escape_json_string, write_json_string};
use super::*;

#[test]
fn key_order_and_whitespace_do_not_change_a_signature() {
    let a = CallSignature::of("grep", r#"{"pattern": "x", "path": "src"}"#);
    let b = CallSignature::of("grep", "{\"path\":\"src\",\n \"pattern\":\"x\"}");
    assert_eq!(a, b);
    assert_ne!(a, CallSignature::of("grep", r#"{"pattern": "y", "path": "src"}"#));
    assert_ne!(a.call, CallSignature::of("find", r#"{"pattern": "x", "path": "src"}"#).call);
}

#[test]
fn long_values_are_compared_whole_and_cut_only_for_display() {
    // Two full-file rewrites that differ only after the 200th character (issue 13).
    let long_a = format!("{}A", "x".repeat(5000));
    let long_b = format!("{}B", "x".repeat(5000));
    let args_a = serde_json::json!({ "file_text": long_a, "path": "f.py" }).to_string();
    let args_b = serde_json::json!({ "file_text": long_b, "path": "f.py" }).to_string();
    assert_ne!(CallSignature::of("create", &args_a), CallSignature::of("create", &args_b));
    // The same through the escaped (allocating) path.
    let esc_a = serde_json::json!({ "file_text": format!("line\n{long_a}") }).to_string();
    let esc_b = serde_json::json!({ "file_text": format!("line\n{long_b}") }).to_string();
    assert_ne!(CallSignature::of("create", &esc_a), CallSignature::of("create", &esc_b));
    assert_eq!(display_arguments(&args_a), display_arguments(&args_b));
    assert!(display_arguments(&args_a).len() < 240);
    assert!(canonical_arguments(&args_a).len() > 5000);
}

/// `s` as a JSON string literal with one kind of character spelled as writers other than
/// serde_json spell it (`choice`), every other character as serde_json writes it: a
/// literal that still means `s`. (Replacing text in the canonical literal does not: in
/// the literal of a backslash and an `n`, `\\n` is no line break.)
fn respelled(s: &str, choice: usize) -> String {
    let mut literal = String::from("\"");
    for c in s.chars() {
        match (choice, c) {
            (0, '\n') => literal.push_str("\\u000a"),
            (1, '/') => literal.push_str("\\/"),
            (2, '\u{1f}') => literal.push_str("\\u001F"),
            (3, 'é') => literal.push_str("\\u00e9"),
            _ => {
                let one = serde_json::to_string(&c.to_string()).unwrap_or_default();
                literal.push_str(&one[1..one.len() - 1]);
            }
        }
    }
    literal.push('"');
    literal
}

#[test]
fn an_upper_case_unicode_escape_hashes_as_its_character() {
    // `\u001F` is no serde_json spelling: read through the tree, not the text (the
    // scanner's arithmetic on its `F` overflowed).
    let upper = CallSignature::of("t", r#"{"k": "\u001F"}"#);
    let lower = CallSignature::of("t", r#"{"k": "\u001f"}"#);
    assert_eq!(upper, lower);
    assert_eq!(upper, CallSignature::of("t", &serde_json::json!({"k": "\u{1f}"}).to_string()));
}

proptest::proptest! {
    /// A string literal's signature is the same whether it is hashed from the text (when
    /// its escapes are canonical) or decoded and escaped again.
    #[test]
    fn literals_hash_as_their_decoded_text(
        s in "(\\PC|[\\x00-\\x1f\"\\\\\\x7f/é])*",
        spelled in proptest::collection::vec(0usize..4, 0..8),
    ) {
        // The literal as serde_json writes it, and variants other writers produce.
        let canonical = serde_json::to_string(&s).unwrap_or_default();
        let mut texts = vec![canonical];
        texts.extend(spelled.iter().map(|&choice| respelled(&s, choice)));
        let mut expected = Fnv64::default();
        write_json_string(&s, &mut expected);
        let expected = expected.finish();
        for text in texts {
            let mut h = Fnv64::default();
            proptest::prop_assert!(hash_raw(&text, &mut h), "{}", text);
            proptest::prop_assert_eq!(h.finish(), expected, "{}", text);
        }
    }

    /// Strings are escaped byte for byte as serde_json escapes them.
    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them(s in "(\\PC|[\\x00-\\x1f\"\\\\\\x7f])*") {
        let mut ours = Vec::new();
        escape_json_string(&s, &mut ours);
        proptest::prop_assert_eq!(String::from_utf8(ours).ok(), serde_json::to_string(&s).ok());
    }
}

#[test]
fn signatures_keep_their_values() {
    // Signatures are saved with runs: these values must not change between versions.
    // (Values computed by the version before escaped strings were hashed without a tree.)
    assert_eq!(CallSignature::of("grep", r#"{"pattern": "x", "path": "src"}"#).call, 0x0162_dba2_2238_ff62);
    assert_eq!(
        CallSignature::of("edit", r#"{"text": "a\nb \"q\"", "path": "f"}"#).call,
        0xeb92_b4dc_f37a_41c5
    );
}

#[test]
fn fast_and_allocating_paths_agree() {
    for args in [
        r#"{"b": [1, 2, {"z": "q", "a": null}], "a": "x"}"#,
        r#"{"k": "a\nb", "j": 1.5}"#,
        r#"{"k\"ey": ["tab\there", "\u0041\u00e9"], "a\u0041": {"x": "\\"}}"#,
        "not json",
    ] {
        let value: Option<Value> = serde_json::from_str(args).ok();
        let mut slow = Fnv64::default();
        slow.write(b"t");
        slow.write_byte(0);
        match &value {
            Some(v) => hash_canonical(v, &mut slow),
            None => slow.write(args.as_bytes()),
        }
        assert_eq!(CallSignature::of("t", args).call, slow.finish(), "{args}");
    }
}

#[test]
fn long_outputs_compare_by_head_tail_and_size_class() {
    let body = |middle: &str, n: u32| {
        format!("{}{middle}{}", "header line 1\n".repeat(100), format!("exit code {n}\n").repeat(30))
    };
    let a = body(&"x".repeat(500), 1);
    let b = body(&"y".repeat(500), 2);
    assert_eq!(observation_fingerprint(&a), observation_fingerprint(&b), "same ends, same size");
    let c = body(&"y".repeat(900), 2);
    assert_ne!(observation_fingerprint(&a), observation_fingerprint(&c), "another size class");
    let d = format!("{}{}", "footer text\n".repeat(120), &a[1400..]);
    assert_ne!(observation_fingerprint(&a), observation_fingerprint(&d), "another head");
}

#[test]
fn volatile_numbers_do_not_hide_a_repeated_observation() {
    let a =
        observation_fingerprint("Error: line 42: syntax error near `fi' (pid 3121) at 2024-05-01T10:00:00");
    let b = observation_fingerprint("Error: line 57: syntax error near `fi' (pid 9) at 2024-06-11T09:13:22");
    assert_eq!(a, b);
    assert_eq!(observation_fingerprint("commit 3f9a2c1d ok"), observation_fingerprint("commit 77e0b21 ok"));
    assert_ne!(observation_fingerprint("file not found"), observation_fingerprint("permission denied"));
    // Words with hex letters stay words.
    assert_ne!(observation_fingerprint("added 3 beds"), observation_fingerprint("added 3 faced"));
}
