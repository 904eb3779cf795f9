//! The native part of the `looprail` Python module: [`looprail_embed::AgentGuard`] as the
//! Python class `looprail.Guard`, with its verdicts as `looprail.Verdict`. The Python side
//! (`python/looprail`) adds the type stubs and the framework adapters; maturin builds both into
//! one wheel (abi3: one wheel per platform for every CPython from 3.9).
//!
//! Everything a Python caller passes is checked here: a config that does not parse, a saved
//! state that is not one, arguments that are neither JSON text nor JSON-able data raise
//! `ValueError` with one readable line, and the guard is left as it was.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use looprail::LooprailConfig;
use looprail::core::profile::Profile;
use looprail::core::provider::Usage;
use looprail_embed::{AgentGuard, Call, Reply, Verdict as NativeVerdict};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

/// What the host does next: `action` (`allow`, `nudge`, `deny`, `ask` or `stop`), the text
/// that goes with it (`message`) and, for `ask` and `stop`, why (`reason`).
#[pyclass(module = "looprail._native", name = "Verdict", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
struct Verdict {
    #[pyo3(get)]
    action: &'static str,
    #[pyo3(get)]
    message: String,
    #[pyo3(get)]
    reason: String,
}

#[pymethods]
impl Verdict {
    /// True unless the agent must stop.
    #[getter]
    fn goes_on(&self) -> bool {
        self.action != "stop"
    }

    fn __repr__(&self) -> String {
        format!("Verdict(action={:?}, message={:?}, reason={:?})", self.action, self.message, self.reason)
    }
}

/// The verdict as a Python object; `allow`, the common answer, is one shared object.
fn verdict(py: Python<'_>, v: NativeVerdict) -> PyResult<Py<Verdict>> {
    static ALLOW: pyo3::sync::PyOnceLock<Py<Verdict>> = pyo3::sync::PyOnceLock::new();
    if v.action == looprail_embed::Action::Allow {
        return Ok(ALLOW.get_or_try_init(py, || Py::new(py, Verdict::from(v)))?.clone_ref(py));
    }
    Py::new(py, Verdict::from(v))
}

impl From<NativeVerdict> for Verdict {
    fn from(v: NativeVerdict) -> Self {
        Self { action: v.action.name(), message: v.message, reason: v.reason }
    }
}

/// One agent's guard: loop detection with its escalation ladder, budgets and time limits, the
/// degenerate-reply watch. Report each step of the agent's loop; do what the verdict says.
#[pyclass(module = "looprail._native", name = "Guard")]
struct Guard {
    // A framework may call from several threads (tools in a pool): one at a time.
    inner: Mutex<AgentGuard>,
}

impl Guard {
    fn of(inner: AgentGuard) -> Self {
        Self { inner: Mutex::new(inner) }
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, AgentGuard> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn now_ms(given: Option<i64>) -> i64 {
    given.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    })
}

fn bad(what: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(what.to_string())
}

/// JSON text from a `str` (taken as is) or JSON-like data (dicts, lists, strings, numbers,
/// booleans, `None`), written here without a round trip through the `json` module; anything
/// else goes through `json.dumps`.
fn json_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyString>() {
        return value.extract::<String>();
    }
    let mut out = String::new();
    if write_json(value, &mut out, 0)? {
        return Ok(out);
    }
    let dumps = value.py().import("json")?.getattr("dumps")?;
    dumps.call1((value,))?.extract::<String>().map_err(|_| bad("the value is not JSON-able"))
}

/// Writes `value` as JSON into `out`; false for a value that is not plain JSON data (or nests
/// deeper than 64), which the caller hands to `json.dumps`.
fn write_json(value: &Bound<'_, PyAny>, out: &mut String, depth: u32) -> PyResult<bool> {
    use pyo3::types::{PyBool, PyFloat, PyInt};
    if depth > 64 {
        return Ok(false);
    }
    if value.is_none() {
        out.push_str("null");
    } else if let Ok(b) = value.cast::<PyBool>() {
        out.push_str(if b.is_true() { "true" } else { "false" });
    } else if value.is_instance_of::<PyInt>() {
        match value.extract::<i64>() {
            Ok(n) => out.push_str(&n.to_string()),
            Err(_) => return Ok(false),
        }
    } else if value.is_instance_of::<PyFloat>() {
        let f = value.extract::<f64>()?;
        match serde_json::Number::from_f64(f) {
            Some(n) => out.push_str(&n.to_string()),
            None => return Ok(false),
        }
    } else if value.is_instance_of::<PyString>() {
        out.push_str(&serde_json::Value::String(value.extract::<String>()?).to_string());
    } else if let Ok(dict) = value.cast::<PyDict>() {
        out.push('{');
        for (i, (k, v)) in dict.iter().enumerate() {
            let Ok(key) = k.cast::<PyString>() else { return Ok(false) };
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::Value::String(key.extract::<String>()?).to_string());
            out.push(':');
            if !write_json(&v, out, depth + 1)? {
                return Ok(false);
            }
        }
        out.push('}');
    } else if let Ok(list) = value.cast::<PyList>() {
        out.push('[');
        for (i, v) in list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if !write_json(&v, out, depth + 1)? {
                return Ok(false);
            }
        }
        out.push(']');
    } else {
        return Ok(false);
    }
    Ok(true)
}

fn load_config(profile: Option<&str>, config: Option<&Bound<'_, PyAny>>) -> PyResult<LooprailConfig> {
    let profile = match profile {
        Some(name) => Profile::from_name(name).ok_or_else(|| {
            bad(format!("unknown profile `{name}` (known: {})", Profile::ALL.map(Profile::name).join(", ")))
        })?,
        None => Profile::CodingAgent,
    };
    let Some(config) = config else { return Ok(LooprailConfig::for_profile(profile)) };
    let result = if config.is_instance_of::<PyDict>() {
        LooprailConfig::from_json_str_for(&json_text(config)?, profile)
    } else {
        let path: std::path::PathBuf = config.extract().map_err(|_| bad("config is a path or a dict"))?;
        LooprailConfig::from_path_for(&path, profile)
    };
    result.map_err(|e| bad(format!("config: {e}")))
}

fn usage_of(usage: Option<&Bound<'_, PyDict>>) -> PyResult<Option<Usage>> {
    let Some(usage) = usage else { return Ok(None) };
    let field = |name: &str| -> PyResult<u64> {
        match usage.get_item(name)? {
            Some(v) if !v.is_none() => {
                v.extract::<u64>().map_err(|_| bad(format!("usage.{name} is a count")))
            }
            _ => Ok(0),
        }
    };
    Ok(Some(Usage {
        input_tokens: field("input_tokens")?,
        output_tokens: field("output_tokens")?,
        cache_read_tokens: field("cache_read_tokens")?,
        cache_write_tokens: field("cache_write_tokens")?,
        estimated_tokens: 0,
    }))
}

fn call_of(item: &Bound<'_, PyAny>) -> PyResult<Call> {
    let get = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        item.get_item(key)
            .map_err(|_| bad(format!("a call has `id`, `name` and `arguments`; `{key}` is missing")))
    };
    Ok(Call {
        id: get("id")?.extract().map_err(|_| bad("a call's `id` is a str"))?,
        name: get("name")?.extract().map_err(|_| bad("a call's `name` is a str"))?,
        arguments: json_text(&get("arguments")?)?,
    })
}

#[pymethods]
impl Guard {
    /// A fresh guard. `profile` is `coding-agent` (the default) or `task`; `config` a path to a
    /// looprail config file (TOML or JSON) or a dict of the same sections.
    #[new]
    #[pyo3(signature = (profile=None, config=None))]
    fn new(profile: Option<&str>, config: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(Self::of(AgentGuard::new(&load_config(profile, config)?)))
    }

    /// A guard that goes on from what `save()` returned, with the same settings as `new`.
    #[staticmethod]
    #[pyo3(signature = (saved, profile=None, config=None))]
    fn restore(saved: &str, profile: Option<&str>, config: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let config = load_config(profile, config)?;
        Ok(Self::of(AgentGuard::restore(&config, saved).map_err(bad)?))
    }

    /// The guard's state as JSON text.
    fn save(&self) -> String {
        self.guard().save()
    }

    /// A message from the user: a new stretch with its own budgets and a fresh ladder.
    #[pyo3(signature = (now_ms=None))]
    fn user_message(&self, now_ms: Option<i64>) {
        self.guard().user_message(now_ms);
    }

    /// Before each model call: budgets, time limits, the iteration cap.
    #[pyo3(signature = (now_ms=None))]
    fn before_model(&self, py: Python<'_>, now_ms: Option<i64>) -> PyResult<Py<Verdict>> {
        verdict(py, self.guard().before_model(self::now_ms(now_ms)))
    }

    /// A piece of the reply's text as it streams; True when the reply repeats itself and
    /// should be cut.
    fn stream_text(&self, delta: &str) -> bool {
        self.guard().stream_text(delta)
    }

    /// The model's reply: its text, its calls (`{"id", "name", "arguments"}`, arguments as JSON
    /// text or data), the usage the provider reported (`input_tokens`, `output_tokens`,
    /// `cache_read_tokens`, `cache_write_tokens`) and the model's name (for its price).
    #[pyo3(signature = (text=None, calls=None, usage=None, model="", now_ms=None))]
    fn model_response(
        &self,
        py: Python<'_>,
        text: Option<String>,
        calls: Option<&Bound<'_, PyList>>,
        usage: Option<&Bound<'_, PyDict>>,
        model: &str,
        now_ms: Option<i64>,
    ) -> PyResult<Py<Verdict>> {
        let calls = match calls {
            Some(list) => list.iter().map(|item| call_of(&item)).collect::<PyResult<Vec<_>>>()?,
            None => Vec::new(),
        };
        let reply = Reply { text, calls, usage: usage_of(usage)?, model: model.to_owned() };
        verdict(py, self.guard().model_response(&reply, self::now_ms(now_ms)))
    }

    /// Before a call of the last reply runs.
    fn before_tool(
        &self,
        py: Python<'_>,
        id: String,
        name: String,
        arguments: &Bound<'_, PyAny>,
    ) -> PyResult<Py<Verdict>> {
        let mut guard = self.guard();
        // A call of the last reply is known by its id: its arguments were read with the reply.
        let known = guard.last_calls().iter().find(|c| c.id == id && c.name == name).cloned();
        let call = match known {
            Some(call) => call,
            None => Call { id, name, arguments: json_text(arguments)? },
        };
        let answer = guard.before_tool(&call);
        drop(guard);
        verdict(py, answer)
    }

    /// A call's result (for a denied call, the denial the model read).
    #[pyo3(signature = (id, output, failed=false))]
    fn after_tool(&self, py: Python<'_>, id: &str, output: &str, failed: bool) -> PyResult<Py<Verdict>> {
        let answer = self.guard().after_tool(id, output, failed);
        verdict(py, answer)
    }

    /// The guard events since the last call, as dicts of the form `looprail audit` reports.
    fn take_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for event in self.guard().take_events() {
            let dict = PyDict::new(py);
            dict.set_item("call_index", event.call_index)?;
            dict.set_item("event", event.event)?;
            dict.set_item("detector", event.detector)?;
            dict.set_item("level", event.level)?;
            dict.set_item("tool", event.tool)?;
            dict.set_item("tier", event.tier)?;
            dict.set_item("evidence", event.evidence)?;
            list.append(dict)?;
        }
        Ok(list)
    }

    /// Tokens and cost counted so far: `(input_tokens, output_tokens, cost)`.
    fn spent(&self) -> (u64, u64, f64) {
        let (usage, cost) = self.guard().usage();
        (usage.input_tokens, usage.output_tokens, cost)
    }

    fn __repr__(&self) -> String {
        "Guard(...)".to_owned()
    }
}

/// The native module, `looprail._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Guard>()?;
    m.add_class::<Verdict>()?;
    Ok(())
}
