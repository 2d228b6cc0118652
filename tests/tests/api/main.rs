//! Integration tests of the API against the real Postgres (a database per test).

#![allow(clippy::unwrap_used)] // test helpers may panic

mod access;
mod auth;
mod bad_input;
mod callbacks;
mod dead_letters;
mod employee_writes;
mod jobs;
mod lifecycle;
mod lists;
mod once;
mod openapi;
mod operations;
mod partners;
mod purge;
mod records;
mod retries;
mod section1;
mod seed;
mod ssn;
mod storage;
mod unavailable;
