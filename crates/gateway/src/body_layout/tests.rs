use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// A request body: fields before and after `messages` (keys sort), the messages given, a
/// system prompt large enough for the body to be kept.
fn body(messages: &[Value], extra: &Value, pretty: bool) -> String {
    let system = "Be brief. ".repeat(WORTH_KEEPING / 10);
    let mut object = json!({"model": "m", "messages": messages, "stream": true, "system": system,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}]});
    if let (Some(object), Some(extra)) = (object.as_object_mut(), extra.as_object()) {
        object.extend(
            extra.iter().filter(|(k, _)| k.as_str() != "messages").map(|(k, v)| (k.clone(), v.clone())),
        );
    }
    if pretty { serde_json::to_string_pretty(&object).unwrap() } else { object.to_string() }
}

fn message() -> impl Strategy<Value = Value> {
    ("(user|assistant)", "(\\PC|[\"\\\\\n])*").prop_map(|(role, text)| json!({"role": role, "content": text}))
}

fn extra() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z]{1,8}", "[a-z ]{0,12}", 0..4)
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k, Value::String(v))).collect()))
}

/// `layouts`' reading of `text`, and the reading of a whole scan.
fn both(layouts: &Layouts, text: &str) -> (Result<Layout, String>, Result<Layout, String>) {
    let body = Bytes::from(text.to_owned());
    (layouts.layout(Api::Anthropic, &body).map(|(_, layout)| layout), Layout::scan(Api::Anthropic, text))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The next request of a conversation is read from the last one's layout (its last
    /// message marked otherwise, as a client moving its cache mark does, and a field after the
    /// messages changed), and reads as a whole scan reads it.
    #[test]
    fn a_body_that_adds_messages_is_read_from_the_last_ones_layout(
        history in prop::collection::vec(message(), 1..6),
        added in prop::collection::vec(message(), 0..3),
        extra in extra(),
        pretty in any::<bool>(),
        remark_last in any::<bool>(),
        new_metadata in any::<bool>(),
    ) {
        let before = body(&history, &json!({"metadata": {"user_id": "a"}, "extra": extra}), pretty);
        let mut now = history.clone();
        if remark_last && let Some(last) = now.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        let metadata = json!({"user_id": if new_metadata { "step 2" } else { "a" }});
        let after = body(&[now, added].concat(), &json!({"metadata": metadata, "extra": extra}), pretty);
        let known = Layout::scan(Api::Anthropic, &before).unwrap();
        let scanned = Layout::scan(Api::Anthropic, &after).unwrap();
        let same = common_prefix(after.as_bytes(), before.as_bytes());
        match known.extended(Api::Anthropic, before.as_bytes(), &after, same) {
            Some(extended) => prop_assert_eq!(extended, scanned),
            None => prop_assert!(remark_last && history.len() == 1, "only a body whose one message changed is scanned whole"),
        }
        let layouts = Layouts::new(16, 1 << 20);
        both(&layouts, &before).0.unwrap();
        let (kept, scanned) = both(&layouts, &after);
        prop_assert_eq!(kept, scanned);
    }

    /// Whatever follows a known body, damaged anywhere, it reads as a whole scan reads it:
    /// accepted or refused alike.
    #[test]
    fn any_body_after_a_known_one_reads_as_a_whole_scan(
        history in prop::collection::vec(message(), 1..5),
        added in prop::collection::vec(message(), 0..3),
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(
            "{}[],:\"\\ 0a\n".chars().collect::<Vec<_>>())), 0..3),
    ) {
        let before = body(&history, &json!({}), false);
        let mut after: Vec<char> = body(&[history, added].concat(), &json!({}), false).chars().collect();
        for (at, c) in edits {
            let i = at.index(after.len());
            after[i] = c;
        }
        let after: String = after.into_iter().collect();
        let layouts = Layouts::new(16, 1 << 20);
        both(&layouts, &before).0.unwrap();
        let (kept, scanned) = both(&layouts, &after);
        prop_assert_eq!(kept, scanned);
    }
}

#[test]
fn conversations_that_begin_alike_keep_a_body_each_within_the_budget() {
    let layouts = Layouts::new(16, 200_000);
    let first =
        |n: usize| json!({"role": "user", "content": format!("{} task {n}", "same start ".repeat(300))});
    let bodies: Vec<String> = (0..3).map(|n| body(&[first(n)], &json!({}), false)).collect();
    for text in &bodies {
        both(&layouts, text).0.unwrap();
    }
    let kept = layouts.kept.lock().unwrap();
    assert_eq!(kept.bodies.len(), 1, "one beginning");
    let list = kept
        .bodies
        .get(&layouts.hasher.hash_one((Api::Anthropic.name(), &bodies[0].as_bytes()[..PREFIX])))
        .unwrap();
    assert_eq!(list.len(), 3, "three conversations");
    assert_eq!(kept.bytes, bodies.iter().map(String::len).sum::<usize>());
    drop(kept);
    // The next step of the second conversation replaces its last body.
    let next = body(&[first(1), json!({"role": "assistant", "content": "done"})], &json!({}), false);
    both(&layouts, &next).0.unwrap();
    let kept = layouts.kept.lock().unwrap();
    assert_eq!(kept.bodies.values().map(Vec::len).sum::<usize>(), 3);
    assert!(kept.bytes <= 200_000);
    drop(kept);
    // A small body is scanned each time, not kept.
    let small = json!({"messages": [{"role": "user", "content": "hi"}]}).to_string();
    both(&layouts, &small).0.unwrap();
    assert_eq!(layouts.kept.lock().unwrap().bodies.len(), 1);
}
