//! Conversions between Python objects and the engine's types, by Python type, in one pass.
//!
//! Traits go straight from a `dict` to engine `Trait`s (never through JSON: a JSON round trip is
//! what dominates attribute conversion in other SDKs). `bool` is tested before `int` because
//! `bool` is a subclass of `int` in Python; ints of any size keep their exact value; `None` is
//! passed as a null trait, exactly as the Flagsmith SDK passes it to the engine. Anything else is
//! a `TypeError` that names the trait.
//!
//! Documents given as a `dict` are written as JSON text ([`json_text_from_py`]) for the engine's
//! document view, by the same rules as the conversion to a `serde_json::Value`
//! ([`json_from_py`], which says what is wrong with a value the writer refuses): numbers keep
//! their int/float type (which the engine's semantics depend on), keys must be `str`, floats
//! finite.

use std::borrow::Cow;

use flagpole_engine::python::number::{parse_py_int, PyInt};
use flagpole_engine::value::{classify_number, JsonNumber};
use flagpole_engine::{Trait, TraitValue};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDict, PyFloat, PyInt as PyIntType, PyList, PyString, PyTuple,
};
use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Number, Value};

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// `traits` as the Flagsmith SDK takes them: `{name: value}`, where a value may also be the
/// SDK's envelope `{"value": v, "transient": bool}` (only `value` matters for evaluation).
pub(crate) fn traits_from_py(traits: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Trait<'static>>> {
    let Some(traits) = traits.filter(|t| !t.is_none()) else {
        return Ok(Vec::new());
    };
    let dict = traits.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "traits must be a dict of trait name to value, not {}",
            type_name(traits)
        ))
    })?;
    let mut out = Vec::with_capacity(dict.len());
    for (k, v) in dict.iter() {
        let key = k.cast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!(
                "trait names must be str, got {} {}",
                type_name(&k),
                k.repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?;
        let key = key.to_cow()?.into_owned();
        let value = if let Ok(envelope) = v.cast::<PyDict>() {
            match envelope.get_item("value")? {
                Some(inner) => trait_value(&key, &inner)?,
                None => {
                    return Err(PyTypeError::new_err(format!(
                        "trait {key:?}: a dict value must be an envelope {{\"value\": ..., \"transient\": bool}}"
                    )))
                }
            }
        } else {
            trait_value(&key, &v)?
        };
        out.push(Trait {
            key: Cow::Owned(key),
            value,
        });
    }
    Ok(out)
}

fn trait_value(key: &str, v: &Bound<'_, PyAny>) -> PyResult<TraitValue<'static>> {
    if v.is_none() {
        return Ok(TraitValue::Null);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(TraitValue::Bool(b.is_true()));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(TraitValue::Str(Cow::Owned(s.to_cow()?.into_owned())));
    }
    if let Ok(i) = v.cast::<PyIntType>() {
        return Ok(TraitValue::Int(py_int(i)?));
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        return Ok(TraitValue::Float(f.value()));
    }
    Err(PyTypeError::new_err(format!(
        "trait {key:?}: unsupported value type {}; trait values must be str, int, float, bool or None",
        type_name(v)
    )))
}

/// A Python int of any size, exactly.
fn py_int(i: &Bound<'_, PyIntType>) -> PyResult<PyInt> {
    if let Ok(small) = i.extract::<i64>() {
        return Ok(PyInt::Small(small));
    }
    let text = i.str()?.to_cow()?.into_owned();
    parse_py_int(&text).ok_or_else(|| PyValueError::new_err(format!("cannot read int {text}")))
}

/// A JSON-like Python value (`dict`/`list`/`tuple`/`str`/`int`/`float`/`bool`/`None`) as JSON.
pub(crate) fn json_from_py(v: &Bound<'_, PyAny>, path: &mut String) -> PyResult<Value> {
    if v.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(i) = v.cast::<PyIntType>() {
        let text = match py_int(i)? {
            PyInt::Small(n) => return Ok(Value::Number(n.into())),
            big => big.to_string(),
        };
        return text
            .parse::<Number>()
            .map(Value::Number)
            .map_err(|e| PyValueError::new_err(format!("{path}: {e}")));
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| {
                PyValueError::new_err(format!("{path}: {} is not valid JSON", f.value()))
            });
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, item) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!("{path}: keys must be str, not {}", type_name(&k)))
            })?;
            let key = key.to_cow()?.into_owned();
            let len = path.len();
            path.push_str(&format!("[{key:?}]"));
            let value = json_from_py(&item, path)?;
            path.truncate(len);
            map.insert(key, value);
        }
        return Ok(Value::Object(map));
    }
    if v.cast::<PyList>().is_ok() || v.cast::<PyTuple>().is_ok() {
        let mut items = Vec::new();
        for (i, item) in v.try_iter()?.enumerate() {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            items.push(json_from_py(&item?, path)?);
            path.truncate(len);
        }
        return Ok(Value::Array(items));
    }
    Err(PyTypeError::new_err(format!(
        "{path}: {} is not a JSON value",
        type_name(v)
    )))
}

/// A JSON-like Python value as JSON text: what [`json_from_py`] converts it to, written out
/// (the same numbers, spelt the same); `None` for any value it refuses (call it for the error).
pub(crate) fn json_text_from_py(v: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(4096);
    serde_json::to_writer(&mut out, &PyJson(v)).ok()?;
    Some(out)
}

/// The text of a `str`'s UTF-8 encoding. A `str` is read through its `bytes` here rather than
/// with `to_cow`, which under the stable ABI for Python 3.9 copies them once more into a
/// `String` (one allocation per string of a document).
fn utf8<'a>(bytes: &'a Bound<'_, PyBytes>) -> Result<&'a str, std::str::Utf8Error> {
    std::str::from_utf8(bytes.as_bytes())
}

/// A Python value, serialised as [`json_from_py`] converts it.
struct PyJson<'a, 'py>(&'a Bound<'py, PyAny>);

impl Serialize for PyJson<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_none() {
            return s.serialize_unit();
        }
        if let Ok(b) = v.cast::<PyBool>() {
            return s.serialize_bool(b.is_true());
        }
        if let Ok(text) = v.cast::<PyString>() {
            let bytes = text.encode_utf8().map_err(S::Error::custom)?;
            return s.serialize_str(utf8(&bytes).map_err(S::Error::custom)?);
        }
        if let Ok(i) = v.cast::<PyIntType>() {
            return match py_int(i).map_err(S::Error::custom)? {
                PyInt::Small(n) => s.serialize_i64(n),
                big => big
                    .to_string()
                    .parse::<Number>()
                    .map_err(S::Error::custom)?
                    .serialize(s),
            };
        }
        if let Ok(f) = v.cast::<PyFloat>() {
            // serde_json would write a NaN or an infinity as `null`; the tree refuses them.
            let f = f.value();
            if !f.is_finite() {
                return Err(S::Error::custom("not valid JSON"));
            }
            return s.serialize_f64(f);
        }
        if let Ok(d) = v.cast::<PyDict>() {
            let mut map = s.serialize_map(Some(d.len()))?;
            for (k, item) in d.iter() {
                let key = k.cast::<PyString>().map_err(S::Error::custom)?;
                let key = key.encode_utf8().map_err(S::Error::custom)?;
                map.serialize_entry(utf8(&key).map_err(S::Error::custom)?, &PyJson(&item))?;
            }
            return map.end();
        }
        if v.cast::<PyList>().is_ok() || v.cast::<PyTuple>().is_ok() {
            let mut seq = s.serialize_seq(None)?;
            for item in v.try_iter().map_err(S::Error::custom)? {
                seq.serialize_element(&PyJson(&item.map_err(S::Error::custom)?))?;
            }
            return seq.end();
        }
        Err(S::Error::custom("not a JSON value"))
    }
}

/// An environment value as the Python object `json.loads` would have produced (numbers typed
/// by their JSON spelling, ints of any size).
pub(crate) fn value_to_py(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Number(n) => match classify_number(n) {
            JsonNumber::Int(PyInt::Small(i)) => i.into_pyobject(py)?.into_any().unbind(),
            JsonNumber::Int(big) => py
                .get_type::<PyIntType>()
                .call1((big.to_string(),))?
                .unbind(),
            JsonNumber::Float(f) => PyFloat::new(py, f).into_any().unbind(),
        },
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(value_to_py(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, value_to_py(py, item)?)?;
            }
            dict.into_any().unbind()
        }
    })
}
