//! Python bindings of the tlpsim core: argument conversion only, no modelling.
//!
//! Exposed as `tlpsim._core`; the `tlpsim` package wraps it in the public API.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tlpsim::analytic::{CompletionSize, DllpPolicy, LinkBandwidth, LinkConfig, LinkRequest};
use tlpsim::validation;

mod front;

create_exception!(
    _core,
    ConfigError,
    PyValueError,
    "A setting outside what PCI Express or tlpsim allows; the message names the allowed values."
);

create_exception!(
    _core,
    ScenarioError,
    ConfigError,
    "A scenario file that cannot be used; the message names the file, the key and what is allowed."
);

create_exception!(
    _core,
    SimulationError,
    pyo3::exceptions::PyRuntimeError,
    "A run that could not finish (a credit deadlock); the message names the ports and credit types."
);

/// A checked scenario, ready to run.
#[pyclass(frozen, module = "tlpsim._core")]
struct Scenario {
    system: tlpsim::fabric::System,
    origin: String,
    text: String,
}

#[pymethods]
impl Scenario {
    /// Where the scenario came from (a path, or `<text>`).
    #[getter]
    fn origin(&self) -> &str {
        &self.origin
    }

    /// The TOML text it was loaded from (what `tlpsim.sweep` varies).
    #[getter]
    fn text(&self) -> &str {
        &self.text
    }

    /// Node names, in file order of sections.
    #[getter]
    fn nodes(&self) -> Vec<String> {
        self.system.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// Link names ("upstream-downstream").
    #[getter]
    fn links(&self) -> Vec<String> {
        self.system.links.iter().map(|l| l.name.clone()).collect()
    }

    /// Workload names.
    #[getter]
    fn workloads(&self) -> Vec<String> {
        self.system
            .workloads
            .iter()
            .map(|w| w.name.clone())
            .collect()
    }

    /// Its shape as JSON text: nodes with their kind and root complex, links with their
    /// generation and width, workloads with their source and target.
    #[getter]
    fn topology_json(&self) -> String {
        self.system.topology_json().to_string()
    }

    /// The engine its `[simulation]` asks for: "des" or "fluid".
    #[getter]
    fn engine(&self) -> &'static str {
        match self.system.engine {
            tlpsim::fabric::Engine::Des => "des",
            tlpsim::fabric::Engine::Fluid => "fluid",
        }
    }

    /// Simulated seconds (duration, warmup included).
    #[getter]
    fn duration_s(&self) -> f64 {
        self.system.duration.as_secs_f64()
    }

    fn __repr__(&self) -> String {
        format!(
            "Scenario({:?}: {} nodes, {} links, {} workloads)",
            self.origin,
            self.system.nodes.len(),
            self.system.links.len(),
            self.system.workloads.len()
        )
    }
}

/// Scenario TOML text with `key` set to `value` (see `tlpsim::scenario::set_value`), checked.
#[pyfunction]
fn set_scenario_value(text: &str, origin: &str, key: &str, value: &str) -> PyResult<String> {
    tlpsim::scenario::set_value(text, origin, key, value)
        .map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// Scenario TOML text with the files its `include = [...]` names read and merged in:
/// self-contained text, checked, each error naming the file it came from (the text itself
/// where it includes nothing). `path` is the file the text was read from, where its include
/// paths start; None for text, whose includes start at the current directory.
#[pyfunction]
#[pyo3(signature = (text, origin, path=None))]
fn expand_includes(
    py: Python<'_>,
    text: &str,
    origin: &str,
    path: Option<std::path::PathBuf>,
) -> PyResult<String> {
    py.detach(|| tlpsim::scenario::expand_includes(text, origin, path.as_deref()))
        .map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// Parses and checks scenario TOML text (the GIL is released meanwhile, so that threads
/// load scenarios in parallel); `origin` names it in error messages.
#[pyfunction]
fn load_scenario(py: Python<'_>, text: &str, origin: &str) -> PyResult<Scenario> {
    let system = py
        .detach(|| tlpsim::scenario::load_str(text, origin))
        .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    Ok(Scenario {
        system,
        origin: origin.to_string(),
        text: text.to_string(),
    })
}

/// Runs a scenario (the GIL is released) with the engine its `[simulation]` names (the
/// fluid engine has no trace and no progress) and returns the result as JSON text, with the
/// Chrome trace JSON of its first `trace_limit` packets when that is given without
/// `trace_path`. With `trace_path`, the trace is streamed to that file as the run goes
/// (memory stays flat) and None comes back in its place; an error writing it raises
/// OSError after the run.
///
/// Every `tlpsim::sim::PROGRESS_EVERY` events the run takes the GIL back briefly: a pending
/// Ctrl-C stops it (KeyboardInterrupt), and `progress(fraction)`, if given, is called with
/// the share of the simulated time done; an exception it raises stops the run and is
/// raised again here.
#[pyfunction]
#[pyo3(signature = (scenario, progress=None, trace_limit=None, trace_path=None))]
fn run_scenario(
    py: Python<'_>,
    scenario: &Scenario,
    progress: Option<Py<PyAny>>,
    trace_limit: Option<usize>,
    trace_path: Option<std::path::PathBuf>,
) -> PyResult<(String, Option<String>)> {
    let system = &scenario.system;
    if system.engine == tlpsim::fabric::Engine::Fluid {
        if trace_limit.is_some() || trace_path.is_some() {
            return Err(ConfigError::new_err(
                "a trace records the packets on the wires and the fluid engine has none: run \
                 with --engine des",
            ));
        }
        return py
            .detach(|| tlpsim::fluid::run(system))
            .map(|r| (r.to_json(), None))
            .map_err(|e| SimulationError::new_err(e.to_string()));
    }
    let trace_file = match &trace_path {
        Some(path) => Some(std::fs::File::create(path)?),
        None => None,
    };
    let mut stopped: Option<PyErr> = None;
    let result = py.detach(|| {
        let mut report = |fraction| {
            Python::attach(|py| {
                let outcome = py.check_signals().and_then(|()| match &progress {
                    Some(cb) => cb.call1(py, (fraction,)).map(|_| ()),
                    None => Ok(()),
                });
                match outcome {
                    Ok(()) => true,
                    Err(e) => {
                        stopped = Some(e);
                        false
                    }
                }
            })
        };
        match (trace_limit, trace_file) {
            (limit, Some(file)) => {
                let limit = limit.unwrap_or(tlpsim::sim::trace::DEFAULT_LIMIT);
                tlpsim::sim::run_traced_to(system, limit, Box::new(file), &mut report)
                    .map(|(r, written)| (tlpsim::fluid::des_json(&r), None, written.err()))
            }
            (Some(limit), None) => {
                tlpsim::sim::run_traced(system, limit, &mut report).map(|(r, t)| {
                    (
                        tlpsim::fluid::des_json(&r),
                        Some(t.to_chrome_json(system)),
                        None,
                    )
                })
            }
            (None, None) => tlpsim::sim::run_with_progress(system, &mut report)
                .map(|r| (tlpsim::fluid::des_json(&r), None, None)),
        }
    });
    match (result, stopped) {
        (_, Some(e)) => Err(e),
        (Ok((_, _, Some(io))), None) => Err(io.into()),
        (Ok((json, chrome, None)), None) => Ok((json, chrome)),
        (Err(e), None) => Err(SimulationError::new_err(e.to_string())),
    }
}

/// Solves a scenario with the flow-level engine (the GIL is released) and returns the result
/// as JSON text (`"engine": "fluid"`); a scenario it cannot run raises SimulationError
/// with one line naming why.
#[pyfunction]
fn run_fluid(py: Python<'_>, scenario: &Scenario) -> PyResult<String> {
    py.detach(|| tlpsim::fluid::run(&scenario.system))
        .map(|r| r.to_json())
        .map_err(|e| SimulationError::new_err(e.to_string()))
}

/// The JSON Schema of the scenario format.
#[pyfunction]
fn scenario_schema() -> String {
    tlpsim::scenario::json_schema()
}

/// `text` as one short printable line, as tlpsim's errors quote user text: control
/// characters escaped, very long words and lines shortened.
#[pyfunction]
fn one_line(text: &str) -> String {
    tlpsim::error::one_line(text)
}

/// A byte count written as scenario files write it ("4KiB", "4KB", "512"); an error names
/// `setting` (a size argument of `link_bandwidth` or the CLI: `payload`, `message`, `header`,
/// `mps`, `mrrs`, `rcb`; else "size") and what is allowed.
#[pyfunction]
fn parse_bytes(setting: &str, text: &str) -> PyResult<u64> {
    let setting = match setting {
        "payload" => "payload",
        "message" => "message",
        "header" => "header",
        "mps" => "mps",
        "mrrs" => "mrrs",
        "rcb" => "rcb",
        _ => "size",
    };
    tlpsim::units::parse_bytes(setting, text).map_err(to_py)
}

fn to_py(e: tlpsim::ConfigError) -> PyErr {
    ConfigError::new_err(e.to_string())
}

/// Link arguments as the Python wrapper passes them: a dict with every field present.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct LinkArgs {
    gen: i64,
    width: i64,
    mps: i64,
    payload: Option<i64>,
    mrrs: i64,
    rcb: i64,
    addressing: i64,
    ecrc: bool,
    dllp: String,
    skp: bool,
    flit: Option<bool>,
    completion: String,
}

impl LinkArgs {
    /// Builds and checks the link configuration.
    fn check(&self) -> PyResult<LinkConfig> {
        LinkRequest {
            gen: self.gen,
            width: self.width,
            mps: self.mps,
            mrrs: self.mrrs,
            rcb: self.rcb,
            payload: self.payload,
            addressing: self.addressing,
            ecrc: self.ecrc,
            dllp: DllpPolicy::parse(&self.dllp).map_err(to_py)?,
            skp: self.skp,
            flit: self.flit,
            completion: CompletionSize::parse(&self.completion).map_err(to_py)?,
        }
        .check()
        .map_err(to_py)
    }
}

fn link_dict<'py>(py: Python<'py>, bw: &LinkBandwidth) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("gen", bw.gen)?;
    d.set_item("width", bw.width)?;
    d.set_item("mps", bw.mps)?;
    d.set_item("payload_bytes", bw.payload_bytes)?;
    d.set_item("raw_gbps", bw.raw_gbps)?;
    d.set_item("encoded_gbps", bw.encoded_gbps)?;
    d.set_item("tlp_wire_bytes", bw.tlp_wire_bytes)?;
    d.set_item("write_gbps", bw.write_gbps)?;
    d.set_item("read_gbps", bw.read_gbps)?;
    d.set_item("efficiency", bw.efficiency)?;
    d.set_item("dllp_fraction", bw.dllp_fraction)?;
    d.set_item("skp_fraction", bw.skp_fraction)?;
    d.set_item("flit", bw.flit)?;
    d.set_item("write_tlps", bw.write_tlps)?;
    d.set_item("read_limit", bw.read_limit)?;
    // The same rates in GB/s (10^9 bytes per second), as GPU and storage people quote them.
    d.set_item("write_gbytes_per_s", bw.write_gbps / 8.0)?;
    d.set_item("read_gbytes_per_s", bw.read_gbps / 8.0)?;
    Ok(d)
}

/// Closed-form bandwidth of one link, as a dict of per-direction figures.
#[pyfunction]
fn link_bandwidth<'py>(py: Python<'py>, args: LinkArgs) -> PyResult<Bound<'py, PyDict>> {
    link_dict(py, &args.check()?.bandwidth())
}

/// Payload rate of `message` bytes plus `header` bytes cut into TLPs of the link's payload.
#[pyfunction]
fn message_bandwidth<'py>(
    py: Python<'py>,
    args: LinkArgs,
    message: i64,
    header: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg = args.check()?;
    let m = cfg.message(message, header).map_err(to_py)?;
    let d = PyDict::new(py);
    d.set_item("gen", cfg.gen.number())?;
    d.set_item("width", cfg.width)?;
    d.set_item("message_bytes", m.message_bytes)?;
    d.set_item("header_bytes", m.header_bytes)?;
    d.set_item("payload_bytes", m.tlp_payload_bytes)?;
    d.set_item("tlps_per_message", m.tlps_per_message)?;
    d.set_item("max_gbps", m.max_gbps)?;
    d.set_item("message_gbps", m.message_gbps)?;
    d.set_item("reduction", m.reduction)?;
    Ok(d)
}

/// Validation rows (dicts with the DESIGN.md fields) and the tables not modelled yet, of
/// every system of the registry or of `only`. The systems the front end computes
/// (`front_systems()`) come from `front`, an object with `cells(system) -> int` and
/// `compute(system, step) -> (rows, unmodelled)` (see `front.rs`); their rows come last and
/// carry `fold`, `low` and `high` where they have a fold.
/// `engine` ("des", the default, or "fluid") computes the simulated cells; on the fluid
/// engine the cells it does not compute are listed per table in the second list.
/// `progress(done, total)`, if given, is called as simulated cells finish (from worker
/// threads, with the GIL taken for the call). A Ctrl-C stops the validation: no further
/// cell starts, and KeyboardInterrupt is raised once the running ones finish.
#[pyfunction]
#[pyo3(signature = (only=None, progress=None, front=None, engine=None))]
fn validate<'py>(
    py: Python<'py>,
    only: Option<&str>,
    progress: Option<Py<PyAny>>,
    front: Option<Py<PyAny>>,
    engine: Option<&str>,
) -> PyResult<(Vec<Bound<'py, PyDict>>, Vec<String>)> {
    let engine = match engine {
        None | Some("des") => tlpsim::fabric::Engine::Des,
        Some("fluid") => tlpsim::fabric::Engine::Fluid,
        Some(other) => {
            return Err(ConfigError::new_err(format!(
                "engine {other:?} is not allowed; allowed: des, fluid"
            )))
        }
    };
    let (core_front, requests) = front::PyFront::new();
    // Only this thread takes requests; the lock makes the receiver shareable for `detach`.
    let requests = std::sync::Mutex::new(requests);
    // Cells run on worker threads, where Python cannot see signals: this thread waits for
    // them and checks for Ctrl-C meanwhile; after one, no further cell starts. It also makes
    // the front end's Python calls the core asks for (a Ctrl-C inside them stops it there).
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = AtomicBool::new(false);
    let mut interrupted: Option<PyErr> = None;
    let report = py.detach(|| {
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                validation::validate_on(
                    only,
                    &|done, total| {
                        if let Some(cb) = &progress {
                            // A failing progress callback must not stop the validation.
                            Python::attach(|py| {
                                let _ = cb.call1(py, (done, total));
                            });
                        }
                        !stop.load(Ordering::Relaxed)
                    },
                    front
                        .as_ref()
                        .map(|_| &core_front as &dyn validation::Front),
                    engine,
                )
            });
            // Every check drains pending signals; the first interrupt is the one raised (a
            // second Ctrl-C while the running cells finish must not surface later, inside
            // the caller's handler of the first).
            let mut stopped = |e: Option<PyErr>| {
                if let Some(e) = e {
                    interrupted.get_or_insert(e);
                    stop.store(true, Ordering::Relaxed);
                }
            };
            let signals = || Python::attach(|py| py.check_signals()).err();
            let requests = requests.lock().unwrap_or_else(|e| e.into_inner());
            while !worker.is_finished() {
                let wait = std::time::Duration::from_millis(50);
                if let (Ok(request), Some(obj)) = (requests.recv_timeout(wait), &front) {
                    stopped(Python::attach(|py| front::serve(py, obj, request)));
                }
                stopped(signals());
            }
            stopped(signals());
            // A panic in a cell reaches Python with its message, as without the worker.
            worker
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    });
    if let Some(e) = interrupted {
        return Err(e);
    }
    // An exception of the front end reaches Python as itself.
    if let (Err(_), Some(e)) = (&report, core_front.raised()) {
        return Err(e);
    }
    let report = report.map_err(to_py)?;
    let rows = report
        .rows
        .iter()
        .map(|r| {
            let d = PyDict::new(py);
            d.set_item("system", &r.system)?;
            d.set_item("table", &r.table)?;
            d.set_item("series", &r.series)?;
            d.set_item("column", &r.column)?;
            d.set_item("unit", &r.unit)?;
            d.set_item("published", r.published)?;
            d.set_item("simulated", r.simulated)?;
            d.set_item("error", r.error)?;
            d.set_item("role", r.role.as_str())?;
            d.set_item("limit", r.limit.as_deref())?;
            if let Some(fold) = &r.fold {
                d.set_item("fold", fold)?;
                d.set_item("low", r.band.map(|b| b.0))?;
                d.set_item("high", r.band.map(|b| b.1))?;
            }
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok((rows, report.unmodelled_tables))
}

/// The systems of the validation registry (the folders of `validation/`), sorted by name.
#[pyfunction]
fn systems() -> Vec<String> {
    validation::systems()
}

/// The registry's systems whose cells the front end computes, as (name, `computed_by`)
/// pairs sorted by name (`validation/SYSTEM/front.toml`).
#[pyfunction]
fn front_systems() -> Vec<(String, String)> {
    validation::front_systems()
        .into_iter()
        .map(|(name, f)| (name, f.computed_by))
        .collect()
}

/// The shipped pcie-bench files (`data/pcie-bench/*/`: `bw_*.txt`, `lat_*.txt`,
/// `sys-lspci.txt`), embedded at build time.
static PCIE_BENCH_FILES: &[(&str, &str)] =
    include!(concat!(env!("OUT_DIR"), "/pcie_bench_files.rs"));

/// The shipped pcie-bench measurements as (`directory/file`, text) pairs, sorted: the result
/// files and `sys-lspci.txt` of each directory of `data/pcie-bench`, embedded at build time
/// so that an installed wheel has them.
#[pyfunction]
fn pcie_bench_files() -> Vec<(&'static str, &'static str)> {
    PCIE_BENCH_FILES.to_vec()
}

/// The `tlpsim._core` extension module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add("TRACE_LIMIT", tlpsim::sim::trace::DEFAULT_LIMIT)?;
    m.add_class::<Scenario>()?;
    m.add_function(wrap_pyfunction!(load_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(set_scenario_value, m)?)?;
    m.add_function(wrap_pyfunction!(expand_includes, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(run_fluid, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_schema, m)?)?;
    m.add_function(wrap_pyfunction!(link_bandwidth, m)?)?;
    m.add_function(wrap_pyfunction!(message_bandwidth, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(systems, m)?)?;
    m.add_function(wrap_pyfunction!(front_systems, m)?)?;
    m.add_function(wrap_pyfunction!(parse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(one_line, m)?)?;
    m.add_function(wrap_pyfunction!(pcie_bench_files, m)?)?;
    Ok(())
}
