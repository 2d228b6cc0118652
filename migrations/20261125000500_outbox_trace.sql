-- Following a request (docs/operations.md, "Logs"): each job records the
-- trace context and request id of the request (or job) that caused it, as
-- the header names to their values the relay publishes with the job's
-- message: {"traceparent": ..., "tracestate": ..., "x-request-id": ...}
-- (common/src/trace.rs). NULL: recorded outside any request (a periodic task).
ALTER TABLE job_outbox ADD COLUMN trace JSONB;
