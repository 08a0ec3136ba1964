//! Integration tests: parser on recorded and encoded bytes, and ground truth on the real kernel
//! (root, initial namespaces).

mod fixtures;
mod live;
