//! `looprail audit --html FILE`: one self-contained HTML page (inline style, script and data;
//! a content security policy that allows no request at all): the summary, a sortable table of
//! runs, and per run a timeline — tool calls along the axis, one mark per event (an element
//! with `data-event`, coloured by level), the stop, and the context peaks with and without
//! compaction. Every timeline is drawn in the page itself (collapsed under its row), so it is
//! in the DOM once loaded, with or without the script.

use std::fmt::Write as _;

use crate::report::{AuditReport, RunReport, StopKind};
use crate::sets::SetReport;

/// Escapes text for HTML content and attribute values.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const WIDTH: f64 = 760.0;
const LEFT: f64 = 20.0;

fn level_class(level: &str) -> &'static str {
    match level {
        "nudge" | "hint" | "reflection" => "l1",
        "directive" => "l2",
        "ask_human" | "abort" | "stop" => "l3",
        _ => "l0",
    }
}

/// The SVG timeline of one run.
fn timeline(run: &RunReport, peak_max: u64) -> String {
    let calls = run.tool_calls.max(1) as f64;
    let x = |index: u64| LEFT + (index as f64 + 0.5) / calls * WIDTH;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="timeline" viewBox="0 0 800 110" width="800" height="110" role="img" aria-label="timeline"><line class="axis" x1="{LEFT}" y1="40" x2="{}" y2="40"/>"#,
        LEFT + WIDTH
    );
    // A tick per call (at most 400 drawn: a longer run gets one per stride).
    let stride = (run.tool_calls / 400).max(1);
    for index in (0..run.tool_calls).step_by(stride as usize) {
        let _ = write!(svg, r#"<line class="tick" x1="{0:.1}" y1="36" x2="{0:.1}" y2="44"/>"#, x(index));
    }
    // Events of one call are stacked upwards.
    let mut stacked: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    for event in &run.events {
        let level = stacked.entry(event.call_index).or_default();
        let y = 40.0 - 9.0 * f64::from(*level);
        *level += 1;
        let _ = write!(
            svg,
            r#"<circle class="mark {}" cx="{:.1}" cy="{y:.1}" r="4" data-event="{}" data-level="{}" data-detector="{}" data-call="{}"><title>#{} {} {} ({}) {}</title></circle>"#,
            level_class(&event.level),
            x(event.call_index),
            esc(&event.event),
            esc(&event.level),
            esc(&event.detector),
            event.call_index,
            event.call_index,
            esc(&event.event),
            esc(&event.level),
            esc(&event.detector),
            esc(&event.tool)
        );
    }
    if let Some(at) = run.stopped_at {
        let _ = write!(
            svg,
            r#"<line class="stop" data-stop="{}" x1="{0:.1}" y1="10" x2="{0:.1}" y2="60"/><text class="label" x="{:.1}" y="9">stop: {}</text>"#,
            x(at),
            (x(at) + 4.0).min(700.0),
            esc(run.stop_reason.as_deref().unwrap_or("")),
        );
    }
    // Context peaks, as bars on one scale for the whole report.
    let bar = |tokens: u64| tokens as f64 / peak_max.max(1) as f64 * WIDTH;
    let _ = write!(
        svg,
        r#"<rect class="peak" x="{LEFT}" y="70" width="{:.1}" height="12"/><text class="label" x="{LEFT}" y="80" dx="4">context peak {} tokens{}</text><rect class="compacted" x="{LEFT}" y="88" width="{:.1}" height="12"/><text class="label" x="{LEFT}" y="98" dx="4">with compaction {} tokens</text></svg>"#,
        bar(run.tokens.peak),
        run.tokens.peak,
        [
            match run.tokens.compactions_in_log {
                0 => String::new(),
                1 => " (the agent compacted once)".to_owned(),
                n => format!(" (the agent compacted {n} times)"),
            },
            run.tokens.logged_peak.map(|p| format!("; the log's own usage: {p}")).unwrap_or_default(),
        ]
        .concat(),
        bar(run.tokens.peak_with_compaction),
        run.tokens.peak_with_compaction
    );
    svg
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;width:100%}\
th,td{padding:4px 8px;border-bottom:1px solid #ddd;text-align:left}th{cursor:pointer;background:#f4f4f4}\
tr.run{cursor:pointer}tr.run:hover{background:#f8f8ff}.num{text-align:right}.axis,.tick{stroke:#999}\
.stop{stroke:#c00;stroke-width:2}.mark.l0{fill:#888}.mark.l1{fill:#e0b000}.mark.l2{fill:#e06000}.mark.l3{fill:#c00}\
.peak{fill:#9ab}.compacted{fill:#5a8}.label{font-size:10px;fill:#333}dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}";

const SCRIPT: &str = "document.querySelectorAll('tr.run').forEach(function(r){r.addEventListener('click',function(){\
var t=document.getElementById(r.dataset.timeline);t.hidden=!t.hidden;});});\
document.querySelectorAll('th[data-key]').forEach(function(h,i){h.addEventListener('click',function(){\
var body=document.querySelector('#runs tbody');var rows=Array.prototype.slice.call(body.querySelectorAll('tr.run'));\
var key=h.dataset.key;var num=h.classList.contains('num');var dir=h.dataset.dir==='asc'?-1:1;h.dataset.dir=dir===1?'asc':'desc';\
rows.sort(function(a,b){var x=a.dataset[key],y=b.dataset[key];return num?dir*(Number(x)-Number(y)):dir*x.localeCompare(y);});\
rows.forEach(function(r){var t=document.getElementById(r.dataset.timeline);body.appendChild(r);body.appendChild(t);});});});\
document.body.dataset.ready='1';";

/// Per set: the runs' lengths and the limits that would stop none of the finished ones.
fn sets(page: &mut String, sets: &[SetReport]) {
    page.push_str("<h2>Run lengths, and limits that spare finished runs</h2><table id=\"sets\"><thead><tr><th>set</th><th class=\"num\">runs</th><th class=\"num\">ended by themselves</th><th>longest stretch, turns (p50 / p90 / p99 / max)</th><th class=\"num\">stopped by loop guards</th><th class=\"num\">stopped by limits</th><th class=\"num\">finished runs a limit cut</th><th class=\"num\">iteration cap that cuts none</th></tr></thead><tbody>");
    for set in sets {
        let t = &set.stretch_turns;
        let _ = write!(
            page,
            r#"<tr><td>{}</td><td class="num">{}</td><td class="num">{}</td><td>{} / {} / {} / {}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">&ge; {}</td></tr>"#,
            esc(&set.path),
            set.runs,
            set.ended_by_themselves,
            t.p50,
            t.p90,
            t.p99,
            t.max,
            set.stopped_by_guards,
            set.stopped_by_limits,
            set.limits_cut_finished_runs,
            set.safe_turn_cap
        );
    }
    page.push_str("</tbody></table>");
}

/// The replies that repeated themselves, run by run (nothing when there are none).
fn degenerate(page: &mut String, report: &AuditReport) {
    if report.summary.degenerate_replies == 0 {
        return;
    }
    page.push_str("<h2>Replies repeating themselves</h2><ul id=\"degenerate\">");
    for run in &report.runs {
        for found in &run.degenerate_replies {
            let _ = write!(page, "<li>{}: {}</li>", esc(&run.path), esc(&super::table::degenerate(found)));
        }
    }
    page.push_str("</ul>");
}

/// The whole page.
pub fn render(report: &AuditReport) -> String {
    let s = &report.summary;
    let peak_max = report.runs.iter().map(|r| r.tokens.peak).max().unwrap_or(1);
    let mut page = String::with_capacity(4096 + report.runs.len() * 2048);
    page.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    page.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">");
    page.push_str("<title>looprail audit</title><style>");
    page.push_str(STYLE);
    page.push_str("</style></head><body><h1>looprail audit</h1><dl id=\"summary\">");
    for (name, value) in [
        ("runs", s.runs.to_string()),
        ("tool calls", s.tool_calls.to_string()),
        ("handed to a human", s.runs_handed_to_human.to_string()),
        ("stopped by a loop guard", s.runs_stopped.to_string()),
        ("stopped by a budget or cap", s.runs_stopped_by_limits.to_string()),
        ("tool calls saved", s.tool_calls_saved.to_string()),
        ("tokens saved by stopping", s.tokens_saved_by_stopping.to_string()),
        (
            "degenerate replies",
            format!("{} ({} bytes a live run would have cut)", s.degenerate_replies, s.degenerate_bytes_cut),
        ),
        (
            "peak context",
            format!("{} tokens ({} with compaction)", s.peak_tokens, s.peak_tokens_with_compaction),
        ),
        ("files not read, or read in part", report.errors.len().to_string()),
    ] {
        let _ = write!(page, "<dt>{}</dt><dd>{}</dd>", esc(name), esc(&value));
    }
    page.push_str("</dl><p>Click a column to sort, a run to open its timeline (marks: yellow nudge, orange directive, red hand-over or stop; the red line is where a live run would have stopped).</p>");
    page.push_str("<table id=\"runs\"><thead><tr><th data-key=\"path\">run</th><th data-key=\"calls\" class=\"num\">calls</th><th data-key=\"events\" class=\"num\">events</th><th data-key=\"guard\">stopped by a loop guard</th><th data-key=\"limit\">stopped by a limit</th><th data-key=\"peak\" class=\"num\">peak tokens</th><th data-key=\"compacted\" class=\"num\">with compaction</th></tr></thead><tbody>");
    for (i, run) in report.runs.iter().enumerate() {
        let stop = |kind: StopKind| match (&run.stop_reason, run.stop_kind == Some(kind)) {
            (Some(reason), true) => format!("{reason} at #{}", run.stopped_at.unwrap_or(0)),
            _ => String::new(),
        };
        let (guard, limit) = (esc(&stop(StopKind::Guard)), esc(&stop(StopKind::Limit)));
        let _ = write!(
            page,
            r#"<tr class="run" data-timeline="t{i}" data-path="{}" data-calls="{}" data-events="{}" data-guard="{guard}" data-limit="{limit}" data-peak="{}" data-compacted="{}"><td>{}</td><td class="num">{}</td><td class="num">{}</td><td>{guard}</td><td>{limit}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
            esc(&run.path),
            run.tool_calls,
            run.events.len(),
            run.tokens.peak,
            run.tokens.peak_with_compaction,
            esc(&run.path),
            run.tool_calls,
            run.events.len(),
            run.tokens.peak,
            run.tokens.peak_with_compaction
        );
        let _ = write!(
            page,
            r#"<tr class="timeline-row" id="t{i}" hidden><td colspan="7">{}</td></tr>"#,
            timeline(run, peak_max)
        );
    }
    page.push_str("</tbody></table>");
    sets(&mut page, &report.sets);
    degenerate(&mut page, report);
    for error in &report.errors {
        let (label, path, why) = (error.label(), esc(&error.path), esc(&error.error));
        let _ = write!(page, "<p class=\"error\">{label}: {path}: {why}</p>");
    }
    // The report's data, for tools that read the page (`</` escaped so it cannot close the tag).
    let data = serde_json::to_string(report).unwrap_or_default().replace("</", "<\\/");
    let _ = write!(page, r#"<script type="application/json" id="audit-data">{data}</script>"#);
    page.push_str("<script>");
    page.push_str(SCRIPT);
    page.push_str("</script></body></html>\n");
    page
}
