//! Shared parts of the employment eligibility records service: configuration,
//! the database, cryptography for personal data, domain types, the queue
//! topology and the seeding of an organization.

pub mod amqp;
pub mod config;
pub mod crypto;
pub mod db;
pub mod dead_letters;
pub mod destination;
pub mod domain;
pub mod events;
pub mod everify;
pub mod inspection;
pub mod jobs;
pub mod key_check;
pub mod key_usage;
pub mod keys;
pub mod links;
pub mod metrics;
pub mod models;
pub mod outbox;
pub mod processes;
pub mod production;
pub mod rekey;
pub mod relay;
pub mod retry;
pub mod seed;
pub mod shutdown;
pub mod signing_secrets;
pub mod startup;
pub mod telemetry;
pub mod tls;
pub mod trace;

pub use config::Config;
