//! Integration tests for the connector: recorded datagrams, the real kernel, forged senders.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fixtures;
mod live;
mod props;
