//! The Python front end as the core's [`Front`]: the validation systems whose cells the
//! `tlpsim` package computes (`validation/SYSTEM/front.toml`: `pciebench`) reach the core's
//! one validation path through a Python object with two methods, `cells(system) -> int` and
//! `compute(system, step) -> (rows, unmodelled)`, `rows` being dicts with the validation
//! row's fields. `step(done)` reports the cells done and returns False once the validation
//! is to stop. The object stays on the Python side; only its answers cross.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyTuple};
use tlpsim::validation::{Front, FrontRows, Role, ValidationRow};

/// A Python object computing the front end's validation systems, and the first exception it
/// raised (given back to Python as itself, not as a core error).
pub(crate) struct PyFront {
    obj: Py<PyAny>,
    raised: Mutex<Option<PyErr>>,
}

impl PyFront {
    /// Wraps the Python object `obj`.
    pub(crate) fn new(obj: Py<PyAny>) -> Self {
        PyFront {
            obj,
            raised: Mutex::new(None),
        }
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
        Python::attach(|py| {
            self.obj
                .call_method1(py, "cells", (system,))?
                .extract::<usize>(py)
        })
        .map_err(|e| self.keep(e))
    }

    fn compute(
        &self,
        system: &str,
        progress: &dyn Fn(usize) -> bool,
    ) -> tlpsim::error::Result<FrontRows> {
        // The Python work runs on a thread of its own, its `step` sending each count here,
        // where the core's progress is called (it is not 'static, so Python cannot hold it).
        let (tx, rx) = channel::<usize>();
        let keep_going = Arc::new(AtomicBool::new(true));
        let result = std::thread::scope(|scope| {
            let job = scope.spawn(|| {
                Python::attach(|py| -> PyResult<FrontRows> {
                    let go = Arc::clone(&keep_going);
                    let step = PyCFunction::new_closure(
                        py,
                        None,
                        None,
                        move |args: &Bound<'_, PyTuple>,
                              _: Option<&Bound<'_, PyDict>>|
                              -> PyResult<bool> {
                            let done: usize = args.get_item(0)?.extract()?;
                            // The receiver outlives the call; a closed one stops nothing.
                            let _ = tx.send(done);
                            Ok(go.load(Ordering::Relaxed))
                        },
                    )?;
                    let out = self.obj.call_method1(py, "compute", (system, step))?;
                    let (rows, unmodelled): (Vec<Bound<'_, PyDict>>, Vec<String>) =
                        out.extract(py)?;
                    Ok(FrontRows {
                        rows: rows.iter().map(row_of).collect::<PyResult<_>>()?,
                        unmodelled,
                    })
                })
            });
            loop {
                match rx.recv_timeout(Duration::from_millis(20)) {
                    Ok(done) => {
                        if !progress(done) {
                            keep_going.store(false, Ordering::Relaxed);
                        }
                    }
                    Err(RecvTimeoutError::Timeout) if !job.is_finished() => {}
                    Err(_) => break,
                }
            }
            while let Ok(done) = rx.try_recv() {
                progress(done);
            }
            job.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        });
        result.map_err(|e| self.keep(e))
    }
}
