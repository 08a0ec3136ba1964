//! The fuzz targets' shared harness (also compiled into the property tests of `tests/it`).
#![allow(missing_docs)]

pub mod harness;
