//! Integration tests of the API against the real Postgres (a database per test).

#![allow(clippy::unwrap_used)] // test helpers may panic

mod access;
mod account;
mod auth;
mod bad_input;
mod calendar;
mod callback_urls;
mod callbacks;
mod connections;
mod dead_letters;
mod employee_writes;
mod everify;
mod history;
mod inspection;
mod jobs;
mod lifecycle;
mod lists;
mod mail_tls;
mod once;
mod openapi;
mod operations;
mod page_headers;
mod partners;
mod purge;
mod queues;
mod records;
mod reminders;
mod retention;
mod retries;
mod reverification;
mod section1;
mod seed;
mod set_password;
mod ssn;
mod status_change_report;
mod storage;
mod supplement_a;
mod throttle;
mod trace;
mod unavailable;
mod upgrade;
