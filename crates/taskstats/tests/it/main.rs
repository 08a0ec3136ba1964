//! Integration tests: parser on recorded and encoded bytes, and ground truth on the real kernel
//! (root, initial namespaces).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fixtures;
mod live;
