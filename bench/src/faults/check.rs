//! After a phase: the drain (outbox and queues empty, no effect arriving),
//! then the count of what each acknowledged write should have produced
//! against what exists and what arrived: lost, duplicated, late.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    time::{Duration, Instant},
};

use chrono::{DateTime, Utc};

use super::{
    infra::Infra,
    phase::Stack,
    sinks::Sinks,
    traffic::{Log, Op, Outcome, Write},
    Fault, Phase,
};

/// The drain is over when nothing new has arrived for this long.
const QUIET: Duration = Duration::from_secs(5);
/// An effect this close before a SIGKILL may have been made without being
/// recorded (after the effect, before its record: docs name the window).
pub const CRASH_WINDOW: Duration = Duration::from_secs(1);

/// One moment on both clocks, to place database timestamps on the `Instant` line.
#[derive(Clone, Copy)]
pub struct Clock {
    instant: Instant,
    utc: DateTime<Utc>,
}

impl Clock {
    pub fn now() -> Self {
        Self {
            instant: Instant::now(),
            utc: Utc::now(),
        }
    }

    fn instant_of(&self, t: DateTime<Utc>) -> Instant {
        match (t - self.utc).to_std() {
            Ok(d) => self.instant + d,
            Err(_) => self.instant,
        }
    }
}

pub struct Window {
    pub clock: Clock,
    pub fault_start: Instant,
    pub fault_end: Instant,
}

/// How the drain ended.
#[derive(Debug, Clone, Default)]
pub struct Drain {
    pub drained: bool,
    pub secs: f64,
    /// Outbox rows not published at the end (-1: could not be read).
    pub outbox_left: i64,
    /// Messages still in queues other than the dead-letter queue, by queue.
    pub queued_left: Vec<(String, u64)>,
    pub dead_lettered: u64,
}

pub async fn drain(stack: &Stack, infra: &Infra, sinks: &Sinks, timeout: Duration) -> Drain {
    let start = Instant::now();
    let dead_queue = i9_common::amqp::Topology::new("i9").dead_letter_queue();
    let mut last_seen = None;
    let mut last_change = Instant::now();
    let mut d = Drain::default();
    loop {
        d.outbox_left = sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM job_outbox WHERE published_at IS NULL",
        )
        .fetch_one(&stack.pool)
        .await
        .unwrap_or(-1);
        let i9s: i64 = sqlx::query_scalar("SELECT count(*) FROM i9s")
            .fetch_one(&stack.pool)
            .await
            .unwrap_or(-1);
        let queues = match infra.rabbit() {
            Ok(r) => r.queues(&stack.vhost).await.ok(),
            Err(_) => None,
        };
        let readable = queues.is_some();
        let queues = queues.unwrap_or_default();
        d.dead_lettered = queues
            .iter()
            .filter(|(n, _)| *n == dead_queue)
            .map(|(_, m)| m)
            .sum();
        d.queued_left = queues
            .into_iter()
            .filter(|(n, m)| *n != dead_queue && *m > 0)
            .collect();
        let seen = (sinks.arrivals(), i9s);
        if last_seen != Some(seen) {
            last_seen = Some(seen);
            last_change = Instant::now();
        }
        d.secs = start.elapsed().as_secs_f64();
        if readable
            && d.outbox_left == 0
            && d.queued_left.is_empty()
            && last_change.elapsed() >= QUIET
        {
            d.drained = true;
            return d;
        }
        if start.elapsed() >= timeout || stack.runaway.load(std::sync::atomic::Ordering::SeqCst) {
            return d;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Expected effects of one kind against what arrived.
#[derive(Debug, Clone, Default)]
pub struct Effects {
    pub expected: usize,
    /// Everything that arrived (emails; callbacks answered 2xx).
    pub received: usize,
    /// Distinct Message-IDs or webhook-ids.
    pub unique: usize,
    /// Arrivals beyond one per write.
    pub duplicates: usize,
    /// Of the duplicates, those the named crash window explains: the first copy
    /// arrived within [`CRASH_WINDOW`] before the worker was killed, the other after.
    pub in_crash_window: usize,
    /// Acknowledged writes with nothing arrived.
    pub missing: usize,
    /// Arrivals for no write of this phase.
    pub unexpected: usize,
}

/// Answers to the clients in a window.
#[derive(Debug, Clone, Default)]
pub struct Answers {
    pub total: usize,
    pub server_errors: usize,
    /// 500s among them (a 503 is the answer for "not available right now").
    pub internal_errors: usize,
    pub transport_errors: usize,
    pub by_status: BTreeMap<u16, usize>,
}

impl Answers {
    fn add(&mut self, status: Option<u16>) {
        self.total += 1;
        match status {
            None => self.transport_errors += 1,
            Some(s) => {
                *self.by_status.entry(s).or_default() += 1;
                if s >= 500 {
                    self.server_errors += 1;
                }
                if s == 500 {
                    self.internal_errors += 1;
                }
            }
        }
    }
}

pub struct Row {
    pub phase: Phase,
    pub held_secs: u64,
    pub writes: usize,
    pub acked: usize,
    pub acked_by_op: BTreeMap<&'static str, usize>,
    /// 4xx final answers: (status, body), never expected from this load.
    pub refused: Vec<(u16, String)>,
    pub gave_up: usize,
    /// The last error of the first write given up.
    pub gave_up_reason: Option<String>,
    /// Writes that needed more than one attempt, and the most attempts of one.
    pub retried: usize,
    pub most_attempts: u32,
    pub employees_expected: usize,
    pub employees_present: usize,
    /// Employees beyond one per profileId or candidate id.
    pub employees_duplicated: i64,
    pub i9_expected: usize,
    pub i9_present: usize,
    pub i9_duplicates: i64,
    pub patches_acked: usize,
    pub patches_lost: usize,
    pub emails: Effects,
    pub callbacks: Effects,
    pub callback_signature_failures: usize,
    /// Rows of `callback_attempts` (every attempt, failed ones included).
    pub callback_attempts: i64,
    pub before: Answers,
    /// From the fault's start until the API's first 2xx after its end.
    pub during: Answers,
    pub after: Answers,
    /// Seconds from the fault's end to the API's first 2xx to a request sent after it.
    pub api_back_after: Option<f64>,
    /// Seconds from the fault's end until every write acknowledged by then had
    /// its effects (and the API answered 2xx); `None`: never, within the drain.
    pub recovered_after: Option<f64>,
    pub drain: Drain,
    pub peak_queued: u64,
    pub runaway: bool,
    pub notes: Vec<String>,
}

impl Row {
    /// Where the row misses its target, plainly.
    pub fn misses(&self) -> Vec<String> {
        let mut m = Vec::new();
        let lost = |what: &str, n: usize| format!("{n} {what} lost");
        if self.employees_present < self.employees_expected {
            m.push(lost(
                "acknowledged employee(s)",
                self.employees_expected - self.employees_present,
            ));
        }
        if self.i9_present < self.i9_expected {
            m.push(lost("I-9(s)", self.i9_expected - self.i9_present));
        }
        // A runaway cuts the phase short: what had not arrived then might have later.
        let not_arrived = if self.runaway {
            "had not arrived when the phase was cut short"
        } else {
            "never arrived"
        };
        if self.emails.missing > 0 {
            m.push(format!("{} email(s) {not_arrived}", self.emails.missing));
        }
        if self.callbacks.missing > 0 {
            m.push(format!(
                "{} callback(s) {not_arrived}",
                self.callbacks.missing
            ));
        }
        if self.patches_lost > 0 {
            m.push(format!(
                "{} acknowledged PATCH(es) not in the record",
                self.patches_lost
            ));
        }
        if self.employees_duplicated > 0 {
            m.push(format!(
                "{} duplicate employee(s)",
                self.employees_duplicated
            ));
        }
        if self.i9_duplicates > 0 {
            m.push(format!("{} duplicate I-9(s)", self.i9_duplicates));
        }
        for (what, e) in [("email", &self.emails), ("callback", &self.callbacks)] {
            let outside = e.duplicates - e.in_crash_window;
            if outside > 0 {
                m.push(format!(
                    "{outside} duplicate {what}(s){}",
                    if e.in_crash_window > 0 {
                        format!(
                            " outside the crash window ({} more inside it)",
                            e.in_crash_window
                        )
                    } else {
                        String::new()
                    }
                ));
            }
        }
        let internal =
            self.before.internal_errors + self.during.internal_errors + self.after.internal_errors;
        if internal > 0 {
            m.push(format!("{internal} answer(s) 500 instead of 503"));
        }
        if !self.refused.is_empty() {
            m.push(format!(
                "{} write(s) refused with a 4xx (first: {} {})",
                self.refused.len(),
                self.refused[0].0,
                self.refused[0].1
            ));
        }
        if self.gave_up > 0 {
            m.push(format!(
                "{} write(s) got no answer but 5xx or errors for {} s (clients gave up; last: {})",
                self.gave_up,
                super::traffic::GIVE_UP_AFTER.as_secs(),
                self.gave_up_reason.as_deref().unwrap_or("?")
            ));
        }
        if self.runaway {
            m.push(format!(
                "runaway: {} messages in the broker; the phase was cut short",
                self.peak_queued
            ));
        }
        if matches!(self.phase, Phase::Fault(_)) && self.recovered_after.is_none() && !self.runaway
        {
            m.push("did not recover (effects of writes acknowledged before the fault's end still missing)".into());
        }
        if !self.drain.drained {
            let queued: u64 = self.drain.queued_left.iter().map(|(_, n)| n).sum();
            m.push(format!(
                "not drained after {:.0} s: {} outbox row(s) unpublished, {queued} message(s) queued ({})",
                self.drain.secs,
                self.drain.outbox_left,
                self.drain
                    .queued_left
                    .iter()
                    .map(|(q, n)| format!("{q}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.drain.dead_lettered > 0 {
            m.push(format!("{} job(s) dead-lettered", self.drain.dead_lettered));
        }
        if self.emails.unexpected + self.callbacks.unexpected > 0 {
            m.push(format!(
                "{} email(s) and {} callback(s) for no write of this phase",
                self.emails.unexpected, self.callbacks.unexpected
            ));
        }
        if self.callback_signature_failures > 0 {
            m.push(format!(
                "{} callback(s) whose signature did not verify",
                self.callback_signature_failures
            ));
        }
        m
    }

    pub fn met(&self) -> bool {
        self.misses().is_empty()
    }
}

/// Count `arrivals` (id, keys, time) against the `expected` and `maybe` keys.
/// `kill`: when the worker was killed, if it was (duplicates around it are
/// told apart). Also the first arrival per key.
fn effects<'a>(
    arrivals: impl Iterator<Item = (&'a str, Vec<String>, Instant)>,
    expected: &HashSet<String>,
    maybe: &HashSet<String>,
    kill: Option<Instant>,
) -> (Effects, HashMap<String, Instant>) {
    let mut per_key: HashMap<String, Vec<Instant>> = HashMap::new();
    let mut ids = HashSet::new();
    let mut e = Effects {
        expected: expected.len(),
        ..Default::default()
    };
    for (id, keys, at) in arrivals {
        e.received += 1;
        ids.insert(id.to_owned());
        let mut known = false;
        for k in keys {
            known |= expected.contains(&k) || maybe.contains(&k);
            per_key.entry(k).or_default().push(at);
        }
        if !known {
            e.unexpected += 1;
        }
    }
    e.unique = ids.len();
    let mut first = HashMap::new();
    for (k, mut times) in per_key {
        times.sort();
        e.duplicates += times.len() - 1;
        if let Some(kill) = kill {
            let t0 = times[0];
            if t0 <= kill && kill.duration_since(t0) <= CRASH_WINDOW {
                e.in_crash_window += times[1..].iter().filter(|t| **t > kill).count();
            }
        }
        first.insert(k, times[0]);
    }
    e.missing = expected.iter().filter(|k| !first.contains_key(*k)).count();
    (e, first)
}

#[allow(clippy::too_many_arguments)]
pub async fn tally(
    phase: Phase,
    held_secs: u64,
    stack: &Stack,
    log: &Log,
    sinks: &Sinks,
    window: Window,
    drain: Drain,
    note: Option<String>,
) -> anyhow::Result<Row> {
    let writes = log.writes();
    let answers = log.answers();
    let received = sinks.received();
    let pool = &stack.pool;
    let acked: Vec<&Write> = writes.iter().filter(|w| w.acked_id().is_some()).collect();
    let mut acked_by_op = BTreeMap::new();
    for w in &acked {
        *acked_by_op.entry(op_name(w.op)).or_default() += 1;
    }

    // Employees of acknowledged creates, and employees per marker (duplicates).
    let created: Vec<i64> = acked
        .iter()
        .filter(|w| w.op.creates())
        .filter_map(|w| w.acked_id())
        .collect();
    let present: i64 = sqlx::query_scalar("SELECT count(*) FROM employees WHERE id = ANY($1)")
        .bind(&created)
        .fetch_one(pool)
        .await?;
    let pattern = format!("{}-%", like_escape(&tag_of(phase)));
    let employees_duplicated: i64 = sqlx::query_scalar(
        "SELECT COALESCE(sum(n - 1), 0)::BIGINT FROM (
             SELECT count(*) AS n FROM employees
             WHERE profile_id LIKE $1 OR integration_candidate_id LIKE $1
             GROUP BY COALESCE(profile_id, integration_candidate_id)) d",
    )
    .bind(&pattern)
    .fetch_one(pool)
    .await?;

    // I-9s of the writes that ask for one.
    let want_i9: Vec<i64> = acked
        .iter()
        .filter(|w| w.op.makes_i9())
        .filter_map(|w| w.acked_id())
        .collect();
    let i9_rows: Vec<(i64, i64, DateTime<Utc>)> = sqlx::query_as(
        "SELECT employee_id, count(*), min(date_created) FROM i9s WHERE employee_id = ANY($1) GROUP BY employee_id",
    )
    .bind(&want_i9)
    .fetch_all(pool)
    .await?;
    let i9_created: HashMap<i64, Instant> = i9_rows
        .iter()
        .map(|(e, _, t)| (*e, window.clock.instant_of(*t)))
        .collect();
    let i9_duplicates: i64 = i9_rows.iter().map(|(_, n, _)| n - 1).sum();

    // PATCHes: the last acknowledged value of each employee is the one stored.
    let mut last_patch: HashMap<i64, String> = HashMap::new();
    let mut patches_acked = 0;
    for w in acked.iter().filter(|w| w.op == Op::Patch) {
        patches_acked += 1;
        if let (Some(id), Some(v)) = (w.acked_id(), &w.value) {
            last_patch.insert(id, v.clone());
        }
    }
    let patched: Vec<i64> = last_patch.keys().copied().collect();
    let titles: Vec<(i64, Option<String>)> =
        sqlx::query_as("SELECT id, job_title FROM employees WHERE id = ANY($1)")
            .bind(&patched)
            .fetch_all(pool)
            .await?;
    let titles: HashMap<i64, Option<String>> = titles.into_iter().collect();
    let patches_lost = last_patch
        .iter()
        .filter(|(id, v)| titles.get(id).cloned().flatten().as_deref() != Some(v.as_str()))
        .count();

    // Emails by recipient, callbacks by candidate.
    let keys = |f: fn(&Write) -> Option<String>, acked_only: bool| -> HashSet<String> {
        writes
            .iter()
            .filter(|w| w.acked_id().is_some() == acked_only)
            .filter_map(f)
            .collect()
    };
    let email_of = |w: &Write| w.email.clone();
    let candidate_of = |w: &Write| w.op.makes_callback().then(|| w.marker.clone());
    let kill = (phase == Phase::Fault(Fault::WorkerKill)).then_some(window.fault_start);
    let (emails, first_mail) = effects(
        received
            .mails
            .iter()
            .map(|m| (m.message_id.as_str(), m.to.clone(), m.at)),
        &keys(email_of, true),
        &keys(email_of, false),
        kill,
    );
    let (callbacks, first_callback) = effects(
        received
            .callbacks
            .iter()
            .map(|c| (c.webhook_id.as_str(), vec![c.candidate.clone()], c.at)),
        &keys(candidate_of, true),
        &keys(candidate_of, false),
        kill,
    );
    let callback_attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM callback_attempts")
        .fetch_one(pool)
        .await?;

    // Answers by window, and the recovery.
    let is_fault = matches!(phase, Phase::Fault(_));
    let api_back = answers
        .iter()
        .filter(|a| a.sent >= window.fault_end && a.status.is_some_and(|s| (200..300).contains(&s)))
        .map(|a| a.at)
        .min();
    let during_end = api_back.unwrap_or(window.fault_end);
    let (mut before, mut during, mut after) =
        (Answers::default(), Answers::default(), Answers::default());
    for a in &answers {
        if !is_fault || a.at < window.fault_start {
            before.add(a.status);
        } else if a.at <= during_end {
            during.add(a.status);
        } else {
            after.add(a.status);
        }
    }
    let mut caught_up = Some(window.fault_end);
    for w in acked.iter().filter(|w| w.finished <= window.fault_end) {
        let id = w.acked_id().unwrap_or_default();
        let mut need: Vec<Option<Instant>> = Vec::new();
        if w.op.makes_i9() {
            need.push(i9_created.get(&id).copied());
        }
        if let Some(e) = &w.email {
            need.push(first_mail.get(e).copied());
        }
        if w.op.makes_callback() {
            need.push(first_callback.get(&w.marker).copied());
        }
        for t in need {
            caught_up = match (caught_up, t) {
                (Some(c), Some(t)) => Some(c.max(t)),
                _ => None,
            };
        }
    }
    let since_end = |t: Instant| t.saturating_duration_since(window.fault_end).as_secs_f64();
    let recovered_after = match (caught_up, api_back) {
        (Some(c), Some(a)) if is_fault => Some(since_end(c.max(a))),
        _ => None,
    };

    let mut notes: Vec<String> = note.into_iter().collect();
    if received.refused_callbacks > 0 {
        notes.push(format!(
            "the partner refused {} callback attempt(s) with 503 while down; the most one event got: {}",
            received.refused_callbacks, received.most_refusals_of_one_event
        ));
    }
    Ok(Row {
        phase,
        held_secs,
        writes: writes.len(),
        acked: acked.len(),
        acked_by_op,
        refused: writes
            .iter()
            .filter_map(|w| match &w.outcome {
                Outcome::Refused { status, body } => Some((*status, body.clone())),
                _ => None,
            })
            .collect(),
        gave_up: writes
            .iter()
            .filter(|w| matches!(w.outcome, Outcome::GaveUp { .. }))
            .count(),
        gave_up_reason: writes.iter().find_map(|w| match &w.outcome {
            Outcome::GaveUp { last } => Some(last.clone()),
            _ => None,
        }),
        retried: writes.iter().filter(|w| w.attempts > 1).count(),
        most_attempts: writes.iter().map(|w| w.attempts).max().unwrap_or(0),
        employees_expected: created.len(),
        employees_present: usize::try_from(present).unwrap_or(0),
        employees_duplicated,
        i9_expected: want_i9.len(),
        i9_present: i9_rows.len(),
        i9_duplicates,
        patches_acked,
        patches_lost,
        emails,
        callbacks,
        callback_signature_failures: received
            .callbacks
            .iter()
            .filter(|c| !c.signature_ok)
            .count(),
        callback_attempts,
        before,
        during,
        after,
        api_back_after: api_back.filter(|_| is_fault).map(since_end),
        recovered_after,
        drain,
        peak_queued: stack.peak_queued.load(std::sync::atomic::Ordering::SeqCst),
        runaway: stack.runaway.load(std::sync::atomic::Ordering::SeqCst),
        notes,
    })
}

/// The tag every marker of a phase starts with.
pub fn tag_of(phase: Phase) -> String {
    phase.name().to_owned()
}

fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

pub fn op_name(op: Op) -> &'static str {
    match op {
        Op::CreateI9 => "create+I-9",
        Op::RemoteHire => "create+remote I-9",
        Op::Login => "create+login email",
        Op::Patch => "PATCH",
        Op::Partner => "partner",
    }
}
