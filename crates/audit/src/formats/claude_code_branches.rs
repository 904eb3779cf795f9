//! The branches of a Claude Code session file. Its lines form a tree: each names its parent
//! (`parentUuid`; a compaction boundary starts a new root and names the line before it in
//! `logicalParentUuid`). Rewinding a conversation ("redo from here") writes the new prompt as a
//! second child of an earlier line, so the file then holds the abandoned branch, then the
//! active one. Read in file order, the two would be one conversation that never happened.
//!
//! A fork is told by a line with two or more children that are the person's prompts (user text,
//! not tool results or harness lines): other lines with several children (a hook's record
//! beside a tool result) are no fork. Every prompt child but the last starts an abandoned
//! branch.

use std::collections::HashMap;

use serde_json::Value;

/// The lines of a session file as conversations: the active one (every line outside an
/// abandoned branch) and, for each abandoned branch, the lines from the tree's root down to the
/// fork and then the branch, named by the uuid of the prompt that starts it. A file without a
/// fork is one conversation of all its lines.
pub fn split(lines: &[Value]) -> Vec<(Option<String>, Vec<&Value>)> {
    // The main conversation's lines with a uuid (sub-agents' sidechains are trees of their own).
    let main: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            uuid(&lines[i]).is_some()
                && !lines[i].get("isSidechain").and_then(Value::as_bool).unwrap_or(false)
        })
        .collect();
    let index: HashMap<&str, usize> = main.iter().filter_map(|&i| Some((uuid(&lines[i])?, i))).collect();
    // A parent is written before its children: one named later (a damaged or crafted file, a
    // cycle) is none, so every walk up or down the tree ends.
    let parent = |i: usize| -> Option<usize> {
        let line = &lines[i];
        let named = line.get("parentUuid").and_then(Value::as_str);
        let named = named.or_else(|| line.get("logicalParentUuid").and_then(Value::as_str));
        named.and_then(|p| index.get(p).copied()).filter(|&p| p < i)
    };
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    for &i in &main {
        if let Some(p) = parent(i) {
            children.entry(p).or_default().push(i);
        }
    }
    let mut abandoned: Vec<usize> = Vec::new();
    for kids in children.values() {
        let prompts: Vec<usize> = kids.iter().copied().filter(|&k| is_prompt(&lines[k])).collect();
        if let Some((_, earlier)) = prompts.split_last() {
            abandoned.extend(earlier);
        }
    }
    if abandoned.is_empty() {
        return vec![(None, lines.iter().collect())];
    }
    abandoned.sort_unstable();
    // Each abandoned branch's lines: its prompt and everything under it.
    let subtree = |root: usize| {
        let mut found = vec![root];
        let mut next = 0;
        while next < found.len() {
            found.extend(children.get(&found[next]).into_iter().flatten());
            next += 1;
        }
        found
    };
    let mut left_out = vec![false; lines.len()];
    let mut branches = Vec::new();
    for &root in &abandoned {
        let mut taken = subtree(root);
        taken.iter().for_each(|&i| left_out[i] = true);
        // The part before the fork, as the model had it then.
        let mut at = parent(root);
        while let Some(i) = at {
            taken.push(i);
            at = parent(i);
        }
        taken.sort_unstable();
        taken.dedup();
        let name = uuid(&lines[root]).map(|u| format!("abandoned-{u}"));
        branches.push((name, taken.into_iter().map(|i| &lines[i]).collect()));
    }
    let active = lines.iter().enumerate().filter(|(i, _)| !left_out[*i]).map(|(_, l)| l).collect();
    let mut all = vec![(None, active)];
    all.extend(branches);
    all
}

fn uuid(line: &Value) -> Option<&str> {
    line.get("uuid").and_then(Value::as_str)
}

/// A prompt the person wrote: a user line with text and no tool result, not the harness's.
fn is_prompt(line: &Value) -> bool {
    let flag = |key: &str| line.get(key).and_then(Value::as_bool).unwrap_or(false);
    if line.get("type").and_then(Value::as_str) != Some("user") || flag("isMeta") || flag("isCompactSummary")
    {
        return false;
    }
    match line.pointer("/message/content") {
        Some(Value::String(_)) => true,
        Some(Value::Array(blocks)) => {
            let kind = |b: &Value| b.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
            blocks.iter().all(|b| kind(b) != "tool_result") && blocks.iter().any(|b| kind(b) == "text")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(uuid: &str, parent: Option<&str>, kind: &str, content: Value) -> Value {
        serde_json::json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
            "message": {"role": kind, "content": content}})
    }

    fn uuids(lines: &[&Value]) -> Vec<String> {
        lines.iter().map(|l| l["uuid"].as_str().unwrap().to_owned()).collect()
    }

    #[test]
    fn a_rewound_prompt_splits_the_file_into_the_active_and_the_abandoned_branch() {
        let result = serde_json::json!([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]);
        let lines = vec![
            line("u1", None, "user", "Fix the build".into()),
            line("a1", Some("u1"), "assistant", serde_json::json!([{"type": "text", "text": "Done."}])),
            line("u2", Some("a1"), "user", "Now add a test".into()),
            line(
                "a2",
                Some("u2"),
                "assistant",
                serde_json::json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
            ),
            line("r2", Some("a2"), "user", result.clone()),
            // Rewound to after a1: the prompt is asked again, differently.
            line(
                "u3",
                Some("a1"),
                "user",
                serde_json::json!([{"type": "text", "text": "Now add two tests"}]),
            ),
            line("a3", Some("u3"), "assistant", serde_json::json!([{"type": "text", "text": "Added."}])),
        ];
        let parts = split(&lines);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].0, None);
        assert_eq!(uuids(&parts[0].1), ["u1", "a1", "u3", "a3"]);
        assert_eq!(parts[1].0.as_deref(), Some("abandoned-u2"));
        assert_eq!(uuids(&parts[1].1), ["u1", "a1", "u2", "a2", "r2"]);
    }

    #[test]
    fn tool_results_and_compactions_are_no_forks() {
        let result =
            |id: &str| serde_json::json!([{"type": "tool_result", "tool_use_id": id, "content": "ok"}]);
        let mut boundary = serde_json::json!({"type": "system", "subtype": "compact_boundary", "uuid": "b", "parentUuid": null, "logicalParentUuid": "r2"});
        boundary["sessionId"] = "s".into();
        let lines = vec![
            line("u1", None, "user", "Go".into()),
            line(
                "a1",
                Some("u1"),
                "assistant",
                serde_json::json!([{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}, {"type": "tool_use", "id": "t2", "name": "Read", "input": {}}]),
            ),
            // Parallel results under one parent, and a hook's record beside them.
            line("r1", Some("a1"), "user", result("t1")),
            line("r2", Some("a1"), "user", result("t2")),
            serde_json::json!({"type": "system", "uuid": "h", "parentUuid": "a1", "content": "hook ran"}),
            boundary,
            line("s", Some("b"), "user", "Summary so far".into()),
        ];
        let parts = split(&lines);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].1.len(), lines.len());
    }

    #[test]
    fn parents_that_loop_back_end_the_walk() {
        // a and b name each other: a cycle no real file holds. Both prompts under a are
        // children of it; the walk up from the abandoned one stops instead of going round.
        let lines = vec![
            line("a", Some("b"), "user", "Start".into()),
            line("b", Some("a"), "assistant", serde_json::json!([{"type": "text", "text": "Ok."}])),
            line("p1", Some("a"), "user", "First try".into()),
            line("p2", Some("a"), "user", "Second try".into()),
        ];
        let parts = split(&lines);
        assert_eq!(parts.len(), 2);
        assert_eq!(uuids(&parts[1].1), ["a", "p1"]);
    }
}
