//! `looprail audit` on fixture runs: detections at known call indices for a looping run, none for
//! a healthy one, in the documented JSON shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Each run of a report as (its file name and `#` suffix, its tool calls, its stop reason).
fn by_file(report: &serde_json::Value) -> Vec<(String, u64, Option<String>)> {
    let runs = report["runs"].as_array().unwrap().iter();
    runs.map(|r| {
        let path = r["path"].as_str().unwrap();
        let name = path[path.rfind('/').unwrap() + 1..].to_owned();
        (name, r["tool_calls"].as_u64().unwrap(), r["stop_reason"].as_str().map(str::to_owned))
    })
    .collect()
}

fn audit(paths: &[String]) -> serde_json::Value {
    let out =
        Command::new(env!("CARGO_BIN_EXE_looprail")).arg("audit").arg("--json").args(paths).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_looping_run_is_caught_at_known_calls_and_a_healthy_one_is_left_alone() {
    let report = audit(&[fixture("looping-swe-agent.json"), fixture("healthy-tau-bench.json")]);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let healthy = runs.iter().find(|r| r["path"].as_str().unwrap().contains("healthy")).unwrap();
    assert_eq!(healthy["events"].as_array().unwrap().len(), 0);
    assert!(healthy["stopped_at"].is_null() && healthy["stop_reason"].is_null());

    let looping = runs.iter().find(|r| r["path"].as_str().unwrap().contains("looping")).unwrap();
    // fasterxml__jackson-databind-3860 repeats one edit with the same result from call 4 on (the
    // loop starts at call 3): its 3rd occurrence (2 stale calls in a row) nudges at 6, the 5th
    // is a directive at 8, the 7th hands over to a human at 10, loop start + 7.
    let ladder: Vec<(u64, String)> = looping["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "agent.loop.detected")
        .map(|e| (e["call_index"].as_u64().unwrap(), e["level"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(ladder, [(6, "nudge".to_owned()), (8, "directive".to_owned()), (10, "ask_human".to_owned())]);
    assert_eq!(looping["stopped_at"], 10);
    assert_eq!(looping["stop_reason"], "ask_human");
    assert_eq!(looping["tool_calls"], 21);
    let event = &looping["events"][0];
    for key in ["call_index", "event", "detector", "level", "tool", "tier", "evidence"] {
        assert!(!event[key].is_null(), "event field {key}");
    }
    // Why it fired: calls 5 and 6 repeated calls 4 and 5.
    assert_eq!(event["tier"], "identical");
    assert_eq!(event["evidence"], serde_json::json!([4, 5]));
    for key in ["peak", "peak_with_compaction"] {
        assert!(looping["tokens"][key].as_u64().unwrap() > 0);
    }
    assert_eq!(report["summary"]["runs"], 2);
    assert_eq!(report["summary"]["runs_handed_to_human"], 1);
}

#[test]
fn a_bad_file_is_reported_and_the_audit_goes_on_without_loops_or_fifos() {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("looprail-audit-robust-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::copy(fixture("healthy-tau-bench.json"), dir.join("good.json")).unwrap();
    std::fs::write(dir.join("broken.json"), "{\"messages\": [").unwrap();
    std::os::unix::fs::symlink(&dir, dir.join("sub/loop")).unwrap(); // a symlink loop
    let status = Command::new("mkfifo").arg(dir.join("pipe.json")).status().unwrap();
    assert!(status.success());

    let report = audit(&[dir.display().to_string()]);
    assert_eq!(report["runs"].as_array().unwrap().len(), 1, "the good run, once (the loop is not followed)");
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0]["path"].as_str().unwrap().ends_with("broken.json"));
    assert!(!errors[0]["error"].as_str().unwrap().is_empty());

    // Nothing readable at all: a non-zero exit and one line.
    std::fs::remove_file(dir.join("good.json")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_looprail")).arg("audit").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no run could be read"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `audit --json --config FILE` on the looping fixture (21 calls, handed to a human at #10).
fn audit_with(config: &str) -> serde_json::Value {
    let dir =
        std::env::temp_dir().join(format!("looprail-audit-budget-{}-{}", std::process::id(), config.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.toml");
    std::fs::write(&path, config).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args([
            "audit",
            "--json",
            "--config",
            &path.display().to_string(),
            &fixture("looping-swe-agent.json"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(dir);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn budgets_and_caps_are_replayed_with_their_fallback_reply() {
    let free = audit_with("");
    let run = &free["runs"][0];
    assert_eq!(run["stop_reason"], "ask_human", "within the default budgets the loop guard acts");
    assert_eq!(run["fallback_reply"], false);
    assert_eq!(run["tool_calls"], 21);
    let calls = 10; // every budget below stops the run before the guard would

    for (config, reason) in [
        ("[loop.budget]\nmax_turns = 1\n", "limit:max_turns"),
        ("[loop.budget]\ntool_call_budget = 2\n", "limit:tool_call_budget"),
        ("[loop.budget]\ntoken_budget = 1000\n", "limit:token_budget"),
        ("[loop.limits]\nmax_iterations = 2\n", "limit:max_iterations"),
    ] {
        let report = audit_with(config);
        let run = &report["runs"][0];
        assert_eq!(run["stop_reason"], reason, "{config}");
        assert_eq!(run["fallback_reply"], true, "{config}");
        let at = run["stopped_at"].as_u64().unwrap();
        assert!(at < calls, "{config}: stopped at {at} of {calls}");
        assert_eq!(report["summary"]["runs_stopped_by_limits"], 1, "{config}");
    }
    // A tool-call budget of 2 lets exactly two calls happen.
    let report = audit_with("[loop.budget]\ntool_call_budget = 2\n");
    assert_eq!(report["runs"][0]["stopped_at"], 1, "the last call made is #1");
}

#[test]
fn swe_agent_and_openhands_logs_are_read_natively() {
    let dir = std::env::temp_dir().join(format!("looprail-audit-formats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // SWE-agent: a run that repeats one failing command.
    let steps: Vec<serde_json::Value> = (0..12)
        .map(|_| serde_json::json!({"thought": "Try again.", "action": "python reproduce.py", "observation": "NameError: name 'x' is not defined", "response": "", "state": {}, "execution_time": 0.2, "query": [], "extra_info": {}}))
        .collect();
    let traj = serde_json::json!({
        "history": [{"role": "user", "content": "Fix issue 42.", "message_type": "observation"}],
        "trajectory": steps,
        "info": {"exit_status": "exit_cost"}
    });
    std::fs::write(dir.join("django-42.traj"), traj.to_string()).unwrap();
    // SWE-agent's retry agent: two attempts, the second one chosen (and copied to the top).
    let healthy_steps: Vec<serde_json::Value> = (0..3)
        .map(|i| serde_json::json!({"thought": "", "action": format!("open file_{i}.py"), "observation": format!("file {i}")}))
        .collect();
    let attempt = |steps: &[serde_json::Value]| serde_json::json!({"history": [{"role": "user", "content": "Fix issue 7."}], "trajectory": steps, "info": {}});
    let mut retried = attempt(&healthy_steps);
    retried["attempts"] = serde_json::json!([attempt(&steps), attempt(&healthy_steps)]);
    retried["info"]["best_attempt_idx"] = 1.into();
    std::fs::write(dir.join("flask-7.traj"), retried.to_string()).unwrap();
    // mini-swe-agent, text mode: the same failing test run again and again.
    let mut mini = vec![
        serde_json::json!({"role": "system", "content": "You are a helpful assistant."}),
        serde_json::json!({"role": "user", "content": "<pr_description>Fix issue 8.</pr_description>"}),
    ];
    for _ in 0..12 {
        mini.push(serde_json::json!({"role": "assistant", "content": "THOUGHT: test again\n\n```bash\npython reproduce.py\n```"}));
        mini.push(serde_json::json!({"role": "user", "content": "<returncode>1</returncode>\n<output>\nNameError: name 'x' is not defined\n</output>"}));
    }
    mini.push(serde_json::json!({"role": "exit", "content": "", "extra": {"exit_status": "LimitsExceeded"}}));
    let mini = serde_json::json!({"info": {"exit_status": "LimitsExceeded"}, "messages": mini, "trajectory_format": "mini-swe-agent-1.1"});
    std::fs::write(dir.join("requests-8.traj.json"), mini.to_string()).unwrap();
    // OpenHands output.jsonl: two runs, one line each.
    let event = |id: u64, v: serde_json::Value| {
        let mut v = v;
        v["id"] = id.into();
        v
    };
    let run = |instance: &str, commands: &[&str]| {
        let mut history = vec![event(
            0,
            serde_json::json!({"source": "user", "action": "message", "args": {"content": "Fix it."}}),
        )];
        for (i, command) in commands.iter().enumerate() {
            let id = 1 + 2 * i as u64;
            history.push(event(
                id,
                serde_json::json!({"source": "agent", "action": "run", "args": {"command": command}}),
            ));
            history.push(event(id + 1, serde_json::json!({"source": "agent", "observation": "run", "content": format!("ran {command}"), "cause": id})));
        }
        serde_json::json!({"instance_id": instance, "history": history}).to_string()
    };
    let healthy: Vec<String> =
        (0..6).map(|i| format!("cat file_{}.py", ["a", "b", "c", "d", "e", "f"][i])).collect();
    let healthy: Vec<&str> = healthy.iter().map(String::as_str).collect();
    // The same loop as OpenHands' agent SDK (V1) writes it, and a crashed instance (no history).
    let mut sdk = vec![
        serde_json::json!({"kind": "SystemPromptEvent", "id": "s0", "source": "agent", "system_prompt": {"type": "text", "text": "You are OpenHands."}, "tools": []}),
        serde_json::json!({"kind": "MessageEvent", "id": "s1", "source": "user", "llm_message": {"role": "user", "content": [{"type": "text", "text": "Fix it."}]}}),
    ];
    for i in 0..14 {
        let call = format!("call_{i}");
        sdk.push(serde_json::json!({"kind": "ActionEvent", "id": format!("a{i}"), "source": "agent", "thought": [], "tool_name": "terminal", "tool_call_id": call, "tool_call": {"id": call, "name": "terminal", "arguments": "{\"command\": \"ls\"}"}, "llm_response_id": format!("r{i}"), "action": {"kind": "TerminalAction", "command": "ls"}}));
        sdk.push(serde_json::json!({"kind": "ObservationEvent", "id": format!("o{i}"), "source": "environment", "tool_name": "terminal", "tool_call_id": call, "action_id": format!("a{i}"), "observation": {"kind": "TerminalObservation", "content": [{"type": "text", "text": "ran ls"}], "is_error": false}}));
    }
    let sdk_run = serde_json::json!({"instance_id": "django-3", "history": sdk}).to_string();
    let crashed =
        serde_json::json!({"instance_id": "flask-9", "history": [], "error": "runtime failed to start"});
    let lines =
        format!("{}\n{}\n{sdk_run}\n{crashed}\n", run("astropy-1", &healthy), run("sympy-2", &["ls"; 14]));
    std::fs::write(dir.join("output.jsonl"), lines).unwrap();
    std::fs::write(dir.join("notes.json"), r#"{"title": "not a run"}"#).unwrap();

    let report = audit(&[dir.display().to_string()]);
    let by_path = |suffix: &str| {
        report["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"].as_str().unwrap().ends_with(suffix))
            .cloned()
    };
    let swe = by_path("django-42.traj").expect("the .traj run");
    assert_eq!(swe["tool_calls"], 12);
    assert_eq!(swe["stop_reason"], "ask_human", "the repeated failing command is caught");
    let mini = by_path("requests-8.traj.json").expect("the mini-swe-agent run");
    assert_eq!(mini["tool_calls"], 12);
    assert_eq!(mini["stop_reason"], "ask_human");
    let first = by_path("flask-7.traj#attempt-0").expect("the retry agent's first attempt");
    assert_eq!(first["tool_calls"], 12);
    let second = by_path("flask-7.traj#attempt-1").expect("its second attempt");
    assert_eq!(second["tool_calls"], 3);
    assert!(by_path("flask-7.traj").is_none(), "the chosen attempt's copy is no run of its own");
    let healthy = by_path("output.jsonl#astropy-1").expect("the first OpenHands run");
    assert_eq!(healthy["tool_calls"], 6);
    assert!(healthy["stop_reason"].is_null());
    let looping = by_path("output.jsonl#sympy-2").expect("the second OpenHands run");
    assert_eq!(looping["tool_calls"], 14);
    assert_eq!(looping["stop_reason"], "ask_human");
    let sdk = by_path("output.jsonl#django-3").expect("the agent SDK's run");
    assert_eq!(sdk["tool_calls"], 14);
    assert_eq!(sdk["stop_reason"], "ask_human");
    assert!(by_path("output.jsonl#flask-9").is_none());
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    let error_of = |suffix: &str| {
        errors.iter().find(|e| e["path"].as_str().unwrap().ends_with(suffix)).unwrap()["error"]
            .as_str()
            .unwrap()
    };
    assert!(error_of("notes.json").contains("expected an OpenAI chat"));
    assert!(
        error_of("output.jsonl").contains("left out run flask-9 (line 4)"),
        "{}",
        error_of("output.jsonl")
    );
    let read_in_part = |suffix: &str| {
        errors.iter().find(|e| e["path"].as_str().unwrap().ends_with(suffix)).unwrap()["read_in_part"].clone()
    };
    assert_eq!(read_in_part("notes.json"), false);
    assert_eq!(read_in_part("output.jsonl"), true, "its other runs are in the report");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn claude_code_and_codex_logs_are_read_with_sub_agents_apart() {
    let dir = std::env::temp_dir().join(format!("looprail-audit-cc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Claude Code stream-json: the main agent delegates; the sub-agent repeats one failing call.
    let mut lines = vec![
        serde_json::json!({"type": "system", "subtype": "init", "session_id": "s1"}),
        serde_json::json!({"type": "user", "message": {"role": "user", "content": "Fix the build."}, "parent_tool_use_id": null, "session_id": "s1"}),
        serde_json::json!({"type": "assistant", "message": {"id": "m0", "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_task", "name": "Task", "input": {"prompt": "Find the error"}}], "usage": {"input_tokens": 1200, "cache_read_input_tokens": 300, "output_tokens": 40}}, "parent_tool_use_id": null, "session_id": "s1"}),
        serde_json::json!({"type": "user", "message": {"role": "user", "content": "Find the error"}, "parent_tool_use_id": "toolu_task", "session_id": "s1"}),
    ];
    for i in 0..12 {
        let id = format!("toolu_{i}");
        lines.push(serde_json::json!({"type": "assistant", "message": {"id": format!("m{}", i + 1), "role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "make"}}]}, "parent_tool_use_id": "toolu_task", "session_id": "s1"}));
        lines.push(serde_json::json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "make: *** No rule to make target", "is_error": true}]}, "parent_tool_use_id": "toolu_task", "session_id": "s1"}));
    }
    lines.push(serde_json::json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_task", "content": "no Makefile"}]}, "parent_tool_use_id": null, "session_id": "s1"}));
    lines.push(
        serde_json::json!({"type": "result", "subtype": "success", "result": "done", "session_id": "s1"}),
    );
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(dir.join("session.jsonl"), text.join("\n")).unwrap();
    // Codex rollout: two shell calls.
    let rollout = [
        serde_json::json!({"timestamp": "t", "type": "session_meta", "payload": {"id": "s2", "cwd": "/w"}}),
        serde_json::json!({"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List and test"}]}}),
        serde_json::json!({"timestamp": "t", "type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "c1"}}),
        serde_json::json!({"timestamp": "t", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "src"}}),
        serde_json::json!({"timestamp": "t", "type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"cargo\",\"test\"]}", "call_id": "c2"}}),
        serde_json::json!({"timestamp": "t", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c2", "output": "ok"}}),
        serde_json::json!({"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 5000, "cached_input_tokens": 4000}}}}),
    ];
    let text: Vec<String> = rollout.iter().map(|l| l.to_string()).collect();
    std::fs::write(dir.join("rollout-1.jsonl"), text.join("\n")).unwrap();
    // A rollout of 2025, before the envelope: a metadata line without a type, bare items.
    let legacy = [
        serde_json::json!({"id": "s3", "timestamp": "2025-09-02T17:17:41.762Z", "instructions": null, "git": {}}),
        serde_json::json!({"record_type": "state"}),
        serde_json::json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List"}]}),
        serde_json::json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "c1"}),
        serde_json::json!({"type": "function_call_output", "call_id": "c1", "output": "src"}),
    ];
    let text: Vec<String> = legacy.iter().map(|l| l.to_string()).collect();
    std::fs::write(dir.join("rollout-legacy.jsonl"), text.join("\n")).unwrap();
    // `codex exec --json`: a command failing the same way again and again.
    let mut exec = vec![
        serde_json::json!({"type": "thread.started", "thread_id": "019a"}),
        serde_json::json!({"type": "turn.started"}),
    ];
    for i in 0..12 {
        let item = serde_json::json!({"id": format!("item_{i}"), "type": "command_execution", "command": "make", "aggregated_output": "make: *** No rule to make target", "exit_code": 2, "status": "completed"});
        exec.push(serde_json::json!({"type": "item.started", "item": item}));
        exec.push(serde_json::json!({"type": "item.completed", "item": item}));
    }
    exec.push(
        serde_json::json!({"type": "turn.completed", "usage": {"input_tokens": 900, "output_tokens": 40}}),
    );
    let text: Vec<String> = exec.iter().map(|l| l.to_string()).collect();
    std::fs::write(dir.join("exec.jsonl"), text.join("\n")).unwrap();

    let report = audit(&[dir.display().to_string()]);
    let runs = report["runs"].as_array().unwrap();
    let path = |r: &serde_json::Value| r["path"].as_str().unwrap().to_owned();
    let main = runs.iter().find(|r| path(r).ends_with("session.jsonl")).expect("the main conversation");
    assert_eq!(main["tool_calls"], 1, "only the Task call");
    assert_eq!(main["tokens"]["logged_peak"], 1500, "the log's own usage, beside our count");
    assert!(main["stop_reason"].is_null());
    let sub = runs.iter().find(|r| path(r).ends_with("session.jsonl#toolu_task")).expect("the sub-agent");
    assert_eq!(sub["tool_calls"], 12);
    assert_eq!(sub["stop_reason"], "ask_human");
    let codex = runs.iter().find(|r| path(r).ends_with("rollout-1.jsonl")).expect("the rollout");
    assert_eq!(codex["tool_calls"], 2);
    assert_eq!(codex["tokens"]["logged_peak"], 5000);
    assert!(sub["tokens"]["logged_peak"].is_null(), "no usage was logged for the sub-agent");
    let exec = runs.iter().find(|r| path(r).ends_with("exec.jsonl")).expect("the exec stream");
    assert_eq!(exec["tool_calls"], 12);
    assert_eq!(exec["stop_reason"], "ask_human");
    let legacy = runs.iter().find(|r| path(r).ends_with("rollout-legacy.jsonl")).expect("the 2025 rollout");
    assert_eq!(legacy["tool_calls"], 1);
    assert!(report["errors"].as_array().unwrap().is_empty(), "{}", report["errors"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_log_still_being_written_is_audited_up_to_its_last_whole_line() {
    let dir = std::env::temp_dir().join(format!("looprail-audit-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lines = [
        serde_json::json!({"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "List files."}}),
        serde_json::json!({"type": "assistant", "uuid": "u2", "sessionId": "s", "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}),
        serde_json::json!({"type": "user", "uuid": "u3", "sessionId": "s", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]}}),
    ];
    let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    text.push_str(r#"{"type":"assistant","uuid":"u4","sessionId":"s","message":{"id":"m2","content":"dé"#);
    // The write stopped inside a character, too: the file holds the first of the two bytes of 'é'.
    let mut bytes = text.into_bytes();
    bytes.pop();
    let live = dir.join("live.jsonl");
    std::fs::write(&live, bytes).unwrap();
    let report = audit(&[live.display().to_string()]);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["tool_calls"], 1);
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "the cut line is not dropped silently");
    assert!(errors[0]["error"].as_str().unwrap().contains("last line is incomplete"), "{}", errors[0]);
    assert_eq!(errors[0]["read_in_part"], true);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_rewound_claude_code_session_reports_the_abandoned_branch_apart() {
    let dir = std::env::temp_dir().join(format!("looprail-audit-rewind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let line = |uuid: &str, parent: Option<&str>, kind: &str, content: serde_json::Value| serde_json::json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "message": {"id": format!("m-{uuid}"), "role": kind, "content": content}});
    let call = |id: &str| serde_json::json!([{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "make"}}]);
    let result = |id: &str| serde_json::json!([{"type": "tool_result", "tool_use_id": id, "content": "ok"}]);
    let lines = [
        line("u1", None, "user", "Fix the build".into()),
        line("a1", Some("u1"), "assistant", call("t1")),
        line("r1", Some("a1"), "user", result("t1")),
        line("u2", Some("r1"), "user", "Now run it twice".into()),
        line("a2", Some("u2"), "assistant", call("t2")),
        line("r2", Some("a2"), "user", result("t2")),
        line("a3", Some("r2"), "assistant", call("t3")),
        line("r3", Some("a3"), "user", result("t3")),
        // The person rewound to after the first result and asked something else.
        line("u4", Some("r1"), "user", "Just commit it".into()),
        line("a4", Some("u4"), "assistant", serde_json::json!([{"type": "text", "text": "Committed."}])),
    ];
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(dir.join("session.jsonl"), text.join("\n")).unwrap();
    let report = audit(&[dir.display().to_string()]);
    let runs = report["runs"].as_array().unwrap();
    let calls: Vec<(String, u64)> = runs
        .iter()
        .map(|r| {
            let path = r["path"].as_str().unwrap();
            (path[path.rfind("session.jsonl").unwrap()..].to_owned(), r["tool_calls"].as_u64().unwrap())
        })
        .collect();
    // The active conversation made one call; the abandoned one three (its first is shared).
    assert_eq!(calls, [("session.jsonl".to_owned(), 1), ("session.jsonl#abandoned-u2".to_owned(), 3)]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_log_saved_with_a_byte_order_mark_and_crlf_lines_is_read() {
    let dir = std::env::temp_dir().join(format!("looprail-audit-bom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = "\u{feff}{\"role\": \"user\", \"content\": \"List files\"}\r\n{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"ls\", \"arguments\": \"{}\"}}]}\r\n{\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"a.txt\"}\r\n";
    std::fs::write(dir.join("windows.jsonl"), log).unwrap();
    let report = audit(&[dir.display().to_string()]);
    assert_eq!(report["runs"][0]["tool_calls"], 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn benchmark_results_files_and_responses_items_are_read() {
    let dir = std::env::temp_dir().join(format!("looprail-audit-tau-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let call = |i: usize| serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{i}"), "type": "function", "function": {"name": "get_reservation_details", "arguments": "{\"reservation_id\": \"ZFA04Y\"}"}}]});
    let result = |i: usize| serde_json::json!({"role": "tool", "tool_call_id": format!("c{i}"), "name": "get_reservation_details", "content": "Error: reservation not found"});
    let mut looping = vec![
        serde_json::json!({"role": "system", "content": "Airline policy."}),
        serde_json::json!({"role": "user", "content": "Change my flight."}),
    ];
    for i in 0..10 {
        looping.extend([call(i), result(i)]);
    }
    let healthy = vec![
        serde_json::json!({"role": "user", "content": "Hi"}),
        serde_json::json!({"role": "assistant", "content": "Hello!"}),
    ];
    let results = serde_json::json!([
        {"task_id": 12, "trial": 0, "reward": 0.0, "info": {}, "traj": looping},
        {"task_id": 12, "trial": 1, "reward": 1.0, "info": {}, "traj": healthy},
    ]);
    std::fs::write(dir.join("gpt-4o-airline.json"), results.to_string()).unwrap();
    let simulations = serde_json::json!({"info": {}, "tasks": [], "simulations": [{"id": "s", "task_id": "7", "trial": 0, "messages": [
        {"role": "user", "content": "My data is off."},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "t1", "name": "get_line", "arguments": {"phone": "555"}, "requestor": "assistant"}]},
        {"role": "tool", "id": "t1", "content": "{}", "requestor": "assistant", "error": false},
        {"role": "assistant", "content": "Fixed."}
    ]}]});
    std::fs::write(dir.join("results.json"), simulations.to_string()).unwrap();
    // The OpenAI Agents SDK's input list: Responses API items in one array.
    let items = serde_json::json!([
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Book it."}]},
        {"type": "function_call", "call_id": "f1", "name": "book", "arguments": "{\"flight\": \"UA1\"}"},
        {"type": "function_call_output", "call_id": "f1", "output": "booked"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Booked."}]}
    ]);
    std::fs::write(dir.join("agents-sdk.json"), items.to_string()).unwrap();
    let report = audit(&[dir.display().to_string()]);
    let summary = by_file(&report);
    assert_eq!(
        summary,
        [
            ("agents-sdk.json".to_owned(), 1, None),
            ("gpt-4o-airline.json#task-12-trial-0".to_owned(), 10, Some("ask_human".to_owned())),
            ("gpt-4o-airline.json#task-12-trial-1".to_owned(), 0, None),
            ("results.json#task-7-trial-0".to_owned(), 1, None),
        ]
    );
    assert!(report["errors"].as_array().unwrap().is_empty(), "{}", report["errors"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn gemini_cli_sessions_are_read_as_documents_and_as_jsonl() {
    let dir = std::env::temp_dir().join(format!("looprail-audit-gemini-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let call = |i: usize| {
        serde_json::json!({"id": format!("t{i}"), "name": "run_shell_command", "args": {"command": "npm test"}, "status": "error",
            "result": [{"functionResponse": {"id": format!("t{i}"), "name": "run_shell_command", "response": {"error": "npm ERR! missing script: test"}}}]})
    };
    let mut messages =
        vec![serde_json::json!({"id": "u1", "type": "user", "content": [{"text": "Run the tests"}]})];
    for i in 0..12 {
        messages.push(serde_json::json!({"id": format!("g{i}"), "type": "gemini", "content": "", "toolCalls": [call(i)]}));
    }
    let document =
        serde_json::json!({"sessionId": "s", "projectHash": "p", "startTime": "t", "messages": messages});
    std::fs::write(dir.join("session-1.json"), document.to_string()).unwrap();
    let mut lines = vec![
        serde_json::json!({"sessionId": "s2", "projectHash": "p", "startTime": "t", "kind": "main"})
            .to_string(),
    ];
    lines.push(serde_json::json!({"id": "u1", "type": "user", "content": "Run the tests"}).to_string());
    lines.push(serde_json::json!({"id": "g1", "type": "gemini", "content": ""}).to_string());
    lines.push(
        serde_json::json!({"id": "g1", "type": "gemini", "content": "", "toolCalls": [call(1)]}).to_string(),
    );
    std::fs::write(dir.join("session-2.jsonl"), lines.join("\n")).unwrap();
    let report = audit(&[dir.display().to_string()]);
    let calls = by_file(&report);
    assert_eq!(
        calls,
        [
            ("session-1.json".to_owned(), 12, Some("ask_human".to_owned())),
            ("session-2.jsonl".to_owned(), 1, None)
        ]
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_conversation_the_openhands_sdk_persisted_is_one_run_of_its_event_files() {
    let root = std::env::temp_dir().join(format!("looprail-audit-oh-sdk-{}", std::process::id()));
    let conversation = root.join("conversations").join("c0ffee");
    let events = conversation.join("events");
    std::fs::create_dir_all(&events).unwrap();
    std::fs::write(conversation.join("base_state.json"), r#"{"id": "c0ffee", "agent": {}}"#).unwrap();
    let mut all = vec![
        serde_json::json!({"kind": "SystemPromptEvent", "id": "e-s", "source": "agent", "system_prompt": {"type": "text", "text": "You are OpenHands."}, "tools": []}),
        serde_json::json!({"kind": "MessageEvent", "id": "e-u", "source": "user", "llm_message": {"role": "user", "content": [{"type": "text", "text": "Fix it."}]}}),
    ];
    for i in 0..14 {
        let call = format!("call_{i}");
        all.push(serde_json::json!({"kind": "ActionEvent", "id": format!("a{i}"), "source": "agent", "thought": [], "tool_name": "terminal", "tool_call_id": call, "tool_call": {"id": call, "name": "terminal", "arguments": "{\"command\": \"ls\"}"}, "llm_response_id": format!("r{i}")}));
        all.push(serde_json::json!({"kind": "ObservationEvent", "id": format!("o{i}"), "source": "environment", "tool_name": "terminal", "tool_call_id": call, "action_id": format!("a{i}"), "observation": {"content": [{"type": "text", "text": "ran ls"}], "is_error": false}}));
    }
    // Written in an order the file names do not follow: the index orders them (past 99999 too).
    for (i, event) in all.iter().enumerate().rev() {
        let index = if i == all.len() - 1 { 100_000 } else { i };
        std::fs::write(events.join(format!("event-{index:05}-{:08x}.json", i + 1)), event.to_string())
            .unwrap();
    }
    let report = audit(&[root.display().to_string()]);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0]["path"].as_str().unwrap().ends_with("c0ffee"));
    assert_eq!(runs[0]["tool_calls"], 14);
    assert_eq!(runs[0]["stop_reason"], "ask_human");
    assert!(
        report["errors"].as_array().unwrap().is_empty(),
        "base_state.json is no run: {}",
        report["errors"]
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn langchain_and_langgraph_message_lists_are_read_in_each_of_their_shapes() {
    let dir = std::env::temp_dir().join(format!("looprail-audit-langchain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A LangGraph state: the same failing call again and again.
    let mut state = vec![serde_json::json!({"type": "human", "content": "Deploy the service", "id": "h1"})];
    for i in 0..12 {
        state.push(serde_json::json!({"type": "ai", "content": "", "tool_calls": [
            {"name": "deploy", "args": {"env": "prod"}, "id": format!("call_{i}"), "type": "tool_call"}]}));
        state.push(serde_json::json!({"type": "tool", "content": "Error: permission denied",
            "tool_call_id": format!("call_{i}"), "status": "error"}));
    }
    let state = serde_json::json!({"messages": state});
    std::fs::write(dir.join("langgraph-state.json"), state.to_string()).unwrap();
    // `messages_to_dict` of a short healthy run.
    let dicts = serde_json::json!([
        {"type": "human", "data": {"content": "List it", "type": "human"}},
        {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "ls", "args": {}, "id": "c1"}], "type": "ai"}},
        {"type": "tool", "data": {"content": "a.txt", "tool_call_id": "c1", "type": "tool"}},
        {"type": "ai", "data": {"content": "One file: a.txt.", "type": "ai"}}
    ]);
    std::fs::write(dir.join("messages-to-dict.json"), dicts.to_string()).unwrap();
    let report = audit(&[dir.display().to_string()]);
    let calls = by_file(&report);
    assert_eq!(calls.len(), 2, "{report}");
    let (state_run, dict_run) = (&calls[0], &calls[1]);
    assert_eq!((state_run.0.as_str(), state_run.1), ("langgraph-state.json", 12));
    assert!(state_run.2.is_some(), "the repeated failing call is stopped: {report}");
    assert_eq!(dict_run, &("messages-to-dict.json".to_owned(), 1, None));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn vercel_ai_sdk_model_and_ui_messages_are_read() {
    let dir = std::env::temp_dir().join(format!("looprail-audit-vercel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Model messages (`response.messages`): a call failing the same way again and again.
    let mut model = vec![serde_json::json!({"role": "user", "content": "Deploy the service"})];
    for i in 0..12 {
        model.push(serde_json::json!({"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": format!("c{i}"), "toolName": "deploy", "input": {"env": "prod"}}]}));
        model.push(serde_json::json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": format!("c{i}"),
            "toolName": "deploy", "output": {"type": "error-text", "value": "Error: permission denied"}}]}));
    }
    std::fs::write(dir.join("model-messages.json"), serde_json::json!({"messages": model}).to_string())
        .unwrap();
    // UI messages (`useChat`): no `content` at all, so a chat reader would see empty messages.
    let ui = serde_json::json!([
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "List it"}]},
        {"id": "a1", "role": "assistant", "parts": [{"type": "step-start"},
            {"type": "tool-ls", "toolCallId": "c1", "state": "output-available", "input": {}, "output": "a.txt"},
            {"type": "step-start"}, {"type": "text", "text": "One file."}]}
    ]);
    std::fs::write(dir.join("ui-messages.json"), ui.to_string()).unwrap();
    let report = audit(&[dir.display().to_string()]);
    let calls = by_file(&report);
    assert_eq!(calls.len(), 2, "{report}");
    assert_eq!((calls[0].0.as_str(), calls[0].1), ("model-messages.json", 12));
    assert!(calls[0].2.is_some(), "the repeated failing call is stopped: {report}");
    assert_eq!(calls[1], ("ui-messages.json".to_owned(), 1, None));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_claude_code_sub_agents_own_file_is_a_run_at_its_path_and_its_sidecar_no_log() {
    // Claude Code 2.1.2+: `<project>/<session>.jsonl`, and each sub-agent's lines in
    // `<project>/<session>/subagents/agent-<id>.jsonl` with an `agent-<id>.meta.json` beside it.
    let dir = std::env::temp_dir().join(format!("looprail-audit-subagents-{}", std::process::id()));
    let agents = dir.join("s1").join("subagents");
    std::fs::create_dir_all(&agents).unwrap();
    let line = |v: serde_json::Value| v.to_string();
    let main = [
        line(
            serde_json::json!({"type": "user", "uuid": "u1", "parentUuid": null, "isSidechain": false, "sessionId": "s1",
            "message": {"role": "user", "content": "Find the bug"}}),
        ),
        line(
            serde_json::json!({"type": "assistant", "uuid": "u2", "parentUuid": "u1", "isSidechain": false, "sessionId": "s1",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_t", "name": "Task", "input": {"prompt": "look"}}]}}),
        ),
        line(
            serde_json::json!({"type": "user", "uuid": "u3", "parentUuid": "u2", "isSidechain": false, "sessionId": "s1",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_t", "content": "found it"}]}}),
        ),
    ];
    std::fs::write(dir.join("s1.jsonl"), main.join("\n")).unwrap();
    let mut sub =
        vec![line(serde_json::json!({"type": "user", "uuid": "a1", "parentUuid": null, "isSidechain": true,
        "agentId": "a7", "sessionId": "s1", "message": {"role": "user", "content": "look"}}))];
    for i in 0..3 {
        sub.push(line(serde_json::json!({"type": "assistant", "uuid": format!("b{i}"), "parentUuid": "a1", "isSidechain": true,
            "agentId": "a7", "sessionId": "s1", "message": {"id": format!("m{i}"), "role": "assistant",
            "content": [{"type": "tool_use", "id": format!("toolu_{i}"), "name": "Grep", "input": {"pattern": format!("bug{i}")}}]}})));
        sub.push(line(serde_json::json!({"type": "user", "uuid": format!("c{i}"), "parentUuid": format!("b{i}"), "isSidechain": true,
            "agentId": "a7", "sessionId": "s1", "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "content": "match"}]}})));
    }
    std::fs::write(agents.join("agent-a7.jsonl"), sub.join("\n")).unwrap();
    std::fs::write(agents.join("agent-a7.meta.json"), r#"{"agentType":"general-purpose","spawnDepth":1}"#)
        .unwrap();
    // Claude Code's own compaction call: the main conversation sent again (its Task call
    // included) under an `acompact-` agent id; and a 2.0.x start-up warm-up probe.
    let again: Vec<String> = main
        .iter()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["isSidechain"] = true.into();
            v["agentId"] = "acompact-9f1".into();
            v.to_string()
        })
        .collect();
    std::fs::write(agents.join("agent-acompact-9f1.jsonl"), again.join("\n")).unwrap();
    let warmup = [
        line(serde_json::json!({"type": "user", "uuid": "w1", "parentUuid": null, "isSidechain": true,
            "agentId": "w2", "sessionId": "s1", "message": {"role": "user", "content": "Warmup"}})),
        line(serde_json::json!({"type": "assistant", "uuid": "w2", "parentUuid": "w1", "isSidechain": true,
            "agentId": "w2", "sessionId": "s1", "message": {"id": "m9", "role": "assistant",
            "content": [{"type": "text", "text": "Ready to search the codebase."}]}})),
    ];
    std::fs::write(dir.join("agent-w2.jsonl"), warmup.join("\n")).unwrap();
    let report = audit(&[dir.display().to_string()]);
    assert!(report["errors"].as_array().unwrap().is_empty(), "the sidecar is no log: {report}");
    let mut runs: Vec<(String, u64)> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap().to_owned(), r["tool_calls"].as_u64().unwrap()))
        .collect();
    runs.sort();
    let expected = [(dir.join("s1.jsonl"), 1), (agents.join("agent-a7.jsonl"), 3)];
    let expected: Vec<(String, u64)> = expected.iter().map(|(p, n)| (p.display().to_string(), *n)).collect();
    assert_eq!(runs, expected, "the compaction call and the warm-up are no runs");
    // Given only files that hold no agent run, the audit fails saying so.
    let output = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .arg("audit")
        .arg(agents.join("agent-acompact-9f1.jsonl"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no agent run in the 1 file read"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A long healthy chat log: `calls` distinct searches, then the answer.
fn long_run(dir: &std::path::Path, calls: usize) -> String {
    let mut log = vec![serde_json::json!({"role": "user", "content": "Survey the code base"})];
    for i in 0..calls {
        log.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{i}"), "type": "function",
            "function": {"name": "search", "arguments": format!("{{\"q\": \"topic {i}\"}}")}}]}));
        log.push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": format!("{} hits for topic {i}", i * 3)}));
    }
    log.push(serde_json::json!({"role": "assistant", "content": "Here is the survey."}));
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("long.json");
    std::fs::write(&path, serde_json::json!({"messages": log}).to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn the_audit_replays_the_gateways_limits_unless_told_otherwise_and_keeps_limit_stops_apart() {
    // Issue 34: a healthy run of 120 calls passes the coding-agent profile (the default); the
    // task profile's 50-turn ceiling would have cut it, and the report says it was a limit.
    let dir = tempfile::Builder::new().prefix("looprail-audit-profile-").tempdir().unwrap();
    let log = long_run(dir.path(), 120);
    let default = audit(std::slice::from_ref(&log));
    assert_eq!(default["runs"][0]["stop_reason"], serde_json::Value::Null, "{}", default["runs"][0]);
    let out = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["audit", "--json", "--profile", "task", &log])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let task: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &task["runs"][0];
    assert_eq!(
        (run["stop_reason"].as_str(), run["stop_kind"].as_str()),
        (Some("limit:max_iterations"), Some("limit"))
    );
    assert_eq!(task["summary"]["runs_stopped_by_limits"], 1);
    assert_eq!(task["summary"]["runs_stopped"], 0, "a limit is not a loop guard's stop");
    // Per set: the run's length, and the smallest cap that would have spared it.
    let set = &task["sets"][0];
    assert_eq!((set["runs"].as_u64(), set["ended_by_themselves"].as_u64()), (Some(1), Some(1)));
    assert_eq!(set["stretch_turns"]["max"], 121);
    assert_eq!(
        (set["limits_cut_finished_runs"].as_u64(), set["safe_turn_cap"].as_u64()),
        (Some(1), Some(122))
    );
    // The table has a column for each kind of stop.
    let out = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["audit", "--profile", "task", &log])
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.lines().next().unwrap().contains("guard stop") && table.contains("limit stop"), "{table}");
    assert!(table.contains("49 (max_iterations)"), "{table}");
    assert!(table.contains("an iteration cap of at least 122 turns per stretch"), "{table}");
    // A wrong profile is one readable line.
    let out = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["audit", "--profile", "weekly", &log])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown profile `weekly`"));
}

#[test]
fn the_help_names_every_format_the_audit_reads() {
    let out = Command::new(env!("CARGO_BIN_EXE_looprail")).args(["audit", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
    for format in looprail_audit::formats::FORMATS {
        assert!(help.contains(format.name()), "`audit --help` does not name {}: {help}", format.name());
    }
    for option in ["--config", "--json", "--html", "--preset", "--profile"] {
        assert!(help.contains(option), "{option}");
    }
}
