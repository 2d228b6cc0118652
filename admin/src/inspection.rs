//! `i9-admin inspection --legal-entity N --out DIR` (docs/inspection.md):
//! every I-9 of the legal entity still under retention as a PDF
//! (`i9_common::inspection`), with `index.csv`. Streams: the ids are read a
//! page at a time, a few I-9s are read and rendered at once, each PDF is
//! written as soon as it is made, so memory stays bounded whatever the
//! number of I-9s.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context;
use chrono::{DateTime, NaiveDate, Utc};
use i9_common::{
    inspection::{self, Gather},
    models::audit::{self, Actor, Entry},
};
use serde_json::json;
use sqlx::PgPool;
use tokio::{sync::Semaphore, task::JoinSet};

/// I-9s read and rendered at once: rendering is CPU, reading waits on
/// Postgres, so a few more than the 2 cores the service is sized for.
const PARALLEL: usize = 4;
/// Ids read per page.
const PAGE: i64 = 256;

/// What an export wrote.
pub struct Exported {
    pub i9s: u64,
    pub pages: u64,
    pub bytes: u64,
    /// Purged (or gone) between the listing and their reading.
    pub skipped: u64,
    pub elapsed: Duration,
    pub index: PathBuf,
}

/// One line of `index.csv`.
struct IndexRow {
    i9_id: i64,
    employee_id: i64,
    last_name: String,
    first_name: String,
    status: String,
    start_date: Option<NaiveDate>,
    completed: Option<DateTime<Utc>>,
    retention_date: Option<NaiveDate>,
    everify_case: Option<String>,
    everify_status: Option<String>,
    everify_result: Option<String>,
    everify_closure_reason: Option<String>,
    file: String,
    pages: usize,
    bytes: usize,
}

const HEADER: [&str; 13] = [
    "i9Id",
    "employeeId",
    "lastName",
    "firstName",
    "status",
    "startDate",
    "completedDate",
    "retentionDate",
    "everifyCaseNumber",
    "everifyStatus",
    "everifyResult",
    "everifyClosureReason",
    "file",
];

/// Refuse a `dir` that exists with something in it, unless `force`; make it
/// otherwise. Either way it ends private (0700): the package holds names,
/// dates of birth and addresses (docs/inspection.md, "Who can read the files").
fn prepare(dir: &Path, force: bool) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if dir.exists() {
        anyhow::ensure!(dir.is_dir(), "{} is not a directory", dir.display());
        let empty = std::fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .next()
            .is_none();
        anyhow::ensure!(
            empty || force,
            "{} is not empty; choose an empty directory, or pass --force to write into it",
            dir.display()
        );
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("making {} private (0700)", dir.display()))
}

/// `path` opened for writing from its start, readable by its owner only
/// (0600, also when `--force` rewrites a file that was not).
fn private_file(path: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("making {} private (0600)", path.display()))?;
    Ok(file)
}

/// Read, render and write I-9 `id` into `dir`; `None` if it is gone.
async fn one(
    pool: PgPool,
    dir: Arc<PathBuf>,
    id: i64,
    generated_at: DateTime<Utc>,
) -> anyhow::Result<Option<IndexRow>> {
    let record = {
        let mut conn = pool.acquire().await?;
        inspection::gather(
            &mut conn,
            id,
            Gather {
                generated_at,
                audit_trail: true,
            },
        )
        .await?
    };
    let Some(record) = record else {
        return Ok(None);
    };
    // The file names carry ids only, never a name or a number of the person.
    let file = format!("i9-{}-employee-{}.pdf", record.i9.id, record.i9.employee_id);
    let path = dir.join(&file);
    tokio::task::spawn_blocking(move || -> anyhow::Result<IndexRow> {
        let (pdf, pages) = inspection::render_counted(&record);
        std::io::Write::write_all(&mut private_file(&path)?, &pdf)
            .with_context(|| format!("writing {}", path.display()))?;
        let i = record.i9;
        let case = record.everify.last();
        Ok(IndexRow {
            i9_id: i.id,
            employee_id: i.employee_id,
            last_name: i.last_name,
            first_name: i.first_name,
            status: i.status.to_string(),
            start_date: i.start_date,
            completed: i.date_completed,
            retention_date: i.retention_date,
            everify_case: case.and_then(|c| c.case_number.clone()),
            everify_status: case.map(|c| {
                if c.simulated() {
                    format!("{} (SIMULATED)", c.status)
                } else {
                    c.status.clone()
                }
            }),
            // A closed case's outcome (the HR trial: "Closed" alone hid it).
            everify_result: case.and_then(|c| c.result.clone()),
            everify_closure_reason: case.and_then(|c| c.closure_reason.clone()),
            file,
            pages,
            bytes: pdf.len(),
        })
    })
    .await?
    .map(Some)
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(T::to_string).unwrap_or_default()
}

/// Export every I-9 of `legal_entity` still under retention into `dir`.
pub async fn export(
    pool: &PgPool,
    legal_entity: i64,
    dir: &Path,
    force: bool,
) -> anyhow::Result<Exported> {
    let started = Instant::now();
    let mut conn = pool.acquire().await?;
    inspection::legal_entity_name(&mut conn, legal_entity)
        .await?
        .with_context(|| format!("no legal entity {legal_entity}"))?;
    drop(conn);
    prepare(dir, force)?;
    let index = dir.join("index.csv");
    let mut csv = csv::Writer::from_writer(private_file(&index)?);
    csv.write_record(HEADER)?;
    let generated_at = Utc::now();
    let shared_dir = Arc::new(dir.to_path_buf());
    let permits = Arc::new(Semaphore::new(PARALLEL));
    let (mut i9s, mut pages, mut bytes, mut skipped) = (0u64, 0u64, 0u64, 0u64);
    let mut after = 0;
    loop {
        let ids = {
            let mut conn = pool.acquire().await?;
            inspection::retained_i9s(&mut conn, legal_entity, after, PAGE).await?
        };
        let Some(&last) = ids.last() else { break };
        after = last;
        let mut tasks = JoinSet::new();
        for id in ids {
            let permit = permits.clone().acquire_owned().await?;
            let (pool, dir) = (pool.clone(), shared_dir.clone());
            tasks.spawn(async move {
                let row = one(pool, dir, id, generated_at).await;
                drop(permit);
                row
            });
        }
        let mut rows = Vec::with_capacity(PAGE as usize);
        while let Some(done) = tasks.join_next().await {
            match done?? {
                Some(row) => rows.push(row),
                None => skipped += 1,
            }
        }
        // The index in the order of the ids, whatever order the tasks ended in.
        rows.sort_by_key(|r| r.i9_id);
        for r in rows {
            csv.write_record([
                r.i9_id.to_string(),
                r.employee_id.to_string(),
                r.last_name,
                r.first_name,
                r.status,
                opt(&r.start_date),
                opt(&r.completed.map(|c| c.date_naive())),
                opt(&r.retention_date),
                r.everify_case.unwrap_or_default(),
                r.everify_status.unwrap_or_default(),
                r.everify_result.unwrap_or_default(),
                r.everify_closure_reason.unwrap_or_default(),
                r.file,
            ])?;
            i9s += 1;
            pages += r.pages as u64;
            bytes += r.bytes as u64;
        }
        csv.flush()?;
    }
    csv.flush()?;
    drop(csv);
    // One entry for the export: counts, never a name (docs/inspection.md).
    audit::record(
        pool,
        &Actor::default(),
        Entry::new("inspection.exported", "legal_entity", legal_entity).detail(json!({
            "i9s": i9s,
            "pages": pages,
            "skipped": skipped,
        })),
    )
    .await?;
    Ok(Exported {
        i9s,
        pages,
        bytes,
        skipped,
        elapsed: started.elapsed(),
        index,
    })
}
