//! proctrace
