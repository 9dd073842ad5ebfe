//! The Python front end as the core's [`Front`]: the validation systems whose cells the
//! `tlpsim` package computes (`validation/SYSTEM/front.toml`: `pciebench`) reach the core's
//! one validation path through a Python object with two methods, `cells(system) -> int` and
//! `compute(system, step) -> (rows, unmodelled)`, `rows` being dicts with the validation
//! row's fields. `step(done)` reports the cells done and returns False once the validation
//! is to stop.
//!
//! The core runs on a worker thread; the Python calls are made on the thread that called
//! `validate` (the main thread, where Ctrl-C raises KeyboardInterrupt inside the Python work
//! at once, as it did before the system joined the registry): [`PyFront`] sends each call
//! there as a [`Request`] and waits for its answer, and [`serve`] makes it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyTuple};
use tlpsim::validation::{Front, FrontRows, Role, ValidationRow};

/// The least time between two progress calls of a front system's cells.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// A call of the Python front end, sent to the thread that serves them.
pub(crate) enum Request {
    /// `cells(system)`.
    Cells {
        /// The system asked about.
        system: String,
        /// Where the answer goes.
        reply: Sender<PyResult<usize>>,
    },
    /// `compute(system, step)`.
    Compute {
        /// The system to compute.
        system: String,
        /// Where `step(done)` sends its counts.
        step: Sender<usize>,
        /// What `step` answers: false once the validation is to stop.
        keep_going: Arc<AtomicBool>,
        /// Where the answer goes.
        reply: Sender<PyResult<FrontRows>>,
    },
}

/// The core's side of the Python front end: sends each call to the serving thread, and keeps
/// the first exception it raised (given back to Python as itself, not as a core error).
pub(crate) struct PyFront {
    /// Where the calls go (a lock: the core may call from any thread).
    requests: Mutex<Sender<Request>>,
    /// The first exception the front end raised.
    raised: Mutex<Option<PyErr>>,
}

impl PyFront {
    /// A front end, and the receiver its calls arrive on for [`serve`] to make.
    pub(crate) fn new() -> (Self, Receiver<Request>) {
        let (tx, rx) = channel();
        let front = PyFront {
            requests: Mutex::new(tx),
            raised: Mutex::new(None),
        };
        (front, rx)
    }

    /// The exception the front end raised, if any (taken: asked once).
    pub(crate) fn raised(&self) -> Option<PyErr> {
        self.raised.lock().ok().and_then(|mut e| e.take())
    }

    /// Keeps `e` to raise it later, and gives the core a one-line error in its place.
    fn keep(&self, e: PyErr) -> tlpsim::ConfigError {
        let line = e.to_string();
        if let Ok(mut slot) = self.raised.lock() {
            slot.get_or_insert(e);
        }
        tlpsim::ConfigError::Conflict(line)
    }

    /// Sends `request` to the serving thread.
    fn send(&self, request: Request) -> tlpsim::error::Result<()> {
        let gone = || tlpsim::ConfigError::Conflict("the front end is gone".into());
        self.requests
            .lock()
            .map_err(|_| gone())?
            .send(request)
            .map_err(|_| gone())
    }
}

/// Makes the call `request` of the Python object `front` on this thread and sends its answer.
/// A KeyboardInterrupt raised inside it is returned (after the answer, an error, is sent) for
/// the caller to raise once the validation ends.
pub(crate) fn serve(py: Python<'_>, front: &Py<PyAny>, request: Request) -> Option<PyErr> {
    let interrupt = |e: &PyErr| {
        e.is_instance_of::<PyKeyboardInterrupt>(py)
            .then(|| e.clone_ref(py))
    };
    match request {
        Request::Cells { system, reply } => {
            let answer = front
                .call_method1(py, "cells", (system,))
                .and_then(|n| n.extract::<usize>(py));
            let stop = answer.as_ref().err().and_then(interrupt);
            let _ = reply.send(answer);
            stop
        }
        Request::Compute {
            system,
            step,
            keep_going,
            reply,
        } => {
            let answer = compute(py, front, &system, step, keep_going);
            let stop = answer.as_ref().err().and_then(interrupt);
            let _ = reply.send(answer);
            stop
        }
    }
}

/// `front.compute(system, step)`, its rows converted.
fn compute(
    py: Python<'_>,
    front: &Py<PyAny>,
    system: &str,
    tx: Sender<usize>,
    keep_going: Arc<AtomicBool>,
) -> PyResult<FrontRows> {
    let step = PyCFunction::new_closure(
        py,
        None,
        None,
        move |args: &Bound<'_, PyTuple>, _: Option<&Bound<'_, PyDict>>| -> PyResult<bool> {
            let done: usize = args.get_item(0)?.extract()?;
            // The core may have finished waiting (an error elsewhere); nothing to tell then.
            let _ = tx.send(done);
            Ok(keep_going.load(Ordering::Relaxed))
        },
    )?;
    let out = front.call_method1(py, "compute", (system, step))?;
    let (rows, unmodelled): (Vec<Bound<'_, PyDict>>, Vec<String>) = out.extract(py)?;
    Ok(FrontRows {
        rows: rows.iter().map(row_of).collect::<PyResult<_>>()?,
        unmodelled,
    })
}

/// A row dict of the front end as the core's row.
fn row_of(d: &Bound<'_, PyDict>) -> PyResult<ValidationRow> {
    fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
        match d.get_item(key)? {
            Some(v) => v.extract().map_err(Into::into),
            None => Err(pyo3::exceptions::PyKeyError::new_err(format!(
                "a front end's validation row has no {key:?}"
            ))),
        }
    }
    let opt = |key: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        Ok(d.get_item(key)?.filter(|v| !v.is_none()))
    };
    let role = match get::<String>(d, "role")?.as_str() {
        "calibrate" => Role::Calibrate,
        "predict" => Role::Predict,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "role {other} is not allowed; allowed: calibrate, predict"
            )))
        }
    };
    let low: Option<f64> = opt("low")?.map(|v| v.extract()).transpose()?;
    let high: Option<f64> = opt("high")?.map(|v| v.extract()).transpose()?;
    Ok(ValidationRow {
        system: get(d, "system")?,
        table: get(d, "table")?,
        series: get(d, "series")?,
        column: get(d, "column")?,
        unit: get(d, "unit")?,
        published: get(d, "published")?,
        simulated: get(d, "simulated")?,
        error: get(d, "error")?,
        role,
        limit: opt("limit")?.map(|v| v.extract()).transpose()?,
        fold: opt("fold")?.map(|v| v.extract()).transpose()?,
        band: low.zip(high),
    })
}

impl Front for PyFront {
    fn cells(&self, system: &str) -> tlpsim::error::Result<usize> {
        let (reply, answer) = channel();
        self.send(Request::Cells {
            system: system.to_string(),
            reply,
        })?;
        answer
            .recv()
            .map_err(|_| tlpsim::ConfigError::Conflict("the front end did not answer".into()))?
            .map_err(|e| self.keep(e))
    }

    fn compute(
        &self,
        system: &str,
        progress: &dyn Fn(usize) -> bool,
    ) -> tlpsim::error::Result<FrontRows> {
        let (step, steps) = channel::<usize>();
        let (reply, answer) = channel();
        let keep_going = Arc::new(AtomicBool::new(true));
        self.send(Request::Compute {
            system: system.to_string(),
            step,
            keep_going: Arc::clone(&keep_going),
            reply,
        })?;
        // The counts come here, where the core's progress is called (it is not 'static, so
        // Python cannot hold it), until the answer does. Only the latest count is passed on,
        // at most every PROGRESS_EVERY: each call takes the GIL from the Python work.
        let done = |n: usize| {
            if !progress(n) {
                keep_going.store(false, Ordering::Relaxed);
            }
        };
        let mut latest = None;
        let mut passed_on = Instant::now();
        let result = loop {
            match steps.recv_timeout(Duration::from_millis(20)) {
                Ok(n) => latest = Some(n),
                Err(RecvTimeoutError::Timeout) => {}
                // `step` is gone: the call has ended, its answer is sent or on its way.
                Err(RecvTimeoutError::Disconnected) => break answer.recv(),
            }
            latest = steps.try_iter().last().or(latest);
            if let Ok(result) = answer.try_recv() {
                break Ok(result);
            }
            if passed_on.elapsed() >= PROGRESS_EVERY {
                if let Some(n) = latest.take() {
                    done(n);
                    passed_on = Instant::now();
                }
            }
        };
        if let Some(n) = steps.try_iter().last().or(latest) {
            done(n);
        }
        result
            .map_err(|_| tlpsim::ConfigError::Conflict("the front end did not answer".into()))?
            .map_err(|e| self.keep(e))
    }
}
