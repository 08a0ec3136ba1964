//! Integration tests for the trace2 crate, in one binary. They run the real
//! `git` installed on the machine and this crate's `trace2-driver`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod api;
mod common;
mod concurrency;
mod config;
mod driver;
mod formats;
mod fuzz;
mod layer;
mod reader;
