//! For tests: a fresh, empty database on the test server, dropped at the
//! end. The server is the one `$STEPWISE_TEST_PG` names (a URL whose
//! user may create databases); `scripts/test` starts a throwaway one and
//! sets it.

use std::sync::atomic::{AtomicU32, Ordering};

use tokio_postgres::NoTls;

/// The variable that names the test server.
pub const TEST_PG_ENV: &str = "STEPWISE_TEST_PG";

/// A database of its own for one test, dropped (with its connections) when
/// this is dropped.
#[derive(Debug)]
pub struct ScratchDb {
    admin: String,
    name: String,
    url: String,
}

/// `url` with its database name replaced by `db`.
fn with_database(url: &str, db: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (before_query, query) = rest
        .split_once('?')
        .map_or((rest, None), |(a, q)| (a, Some(q)));
    let authority = before_query
        .split_once('/')
        .map_or(before_query, |(a, _)| a);
    match query {
        Some(q) => format!("{scheme}://{authority}/{db}?{q}"),
        None => format!("{scheme}://{authority}/{db}"),
    }
}

/// The test server's URL, or how to get one.
pub fn server() -> Result<String, String> {
    std::env::var(TEST_PG_ENV)
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            format!(
                "{TEST_PG_ENV} is not set: these tests need a PostgreSQL server (15 or newer) whose \
                 user may create databases. Run them with `scripts/test`, which starts a throwaway \
                 one (initdb and pg_ctl must be installed), or set {TEST_PG_ENV}=postgres://USER@127.0.0.1:PORT/postgres"
            )
        })
}

fn explain(sql: &str, e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{sql}: {}", db.message()),
        None => format!("{sql}: {e}"),
    }
}

fn admin(url: &str, sql: String) -> Result<(), String> {
    std::thread::scope(|s| s.spawn(|| admin_now(url, sql)).join())
        .map_err(|_| "the admin thread panicked".to_owned())?
}

fn admin_now(url: &str, sql: String) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, NoTls).await.map_err(|e| {
            format!(
                "cannot connect to the test server {}: {e}",
                super::redact(url)
            )
        })?;
        let task = tokio::spawn(connection);
        let result = client
            .batch_execute(&sql)
            .await
            .map_err(|e| explain(&sql, &e));
        drop(client);
        let _ = task.await;
        result
    })
}

impl ScratchDb {
    /// Creates `stepwise_test_<tag>_<pid>_<n>` on the test server.
    pub fn new(tag: &str) -> Result<Self, String> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let server = server()?;
        let tag: String = tag
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(30)
            .collect();
        let name = format!(
            "stepwise_test_{tag}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        admin(
            &server,
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )?;
        admin(&server, format!("CREATE DATABASE {name}"))?;
        Ok(Self {
            url: with_database(&server, &name),
            admin: server,
            name,
        })
    }

    /// Its URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs SQL on it (e.g. to look at the tables, or cut connections).
    pub fn execute(&self, sql: &str) -> Result<(), String> {
        admin(&self.url, sql.to_owned())
    }

    /// Runs SQL on the server's own database (e.g. `pg_terminate_backend`).
    pub fn execute_on_server(&self, sql: &str) -> Result<(), String> {
        admin(&self.admin, sql.to_owned())
    }

    /// Rows of a query on it, each as its columns' text (NULL as `None`).
    pub fn query(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
        std::thread::scope(|s| s.spawn(|| self.query_now(sql)).join())
            .map_err(|_| "the query thread panicked".to_owned())?
    }

    fn query_now(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&self.url, NoTls)
                .await
                .map_err(|e| e.to_string())?;
            let task = tokio::spawn(connection);
            let result = client.simple_query(sql).await.map_err(|e| explain(sql, &e));
            drop(client);
            let _ = task.await;
            let rows = result?
                .into_iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                        (0..row.len())
                            .map(|i| row.get(i).map(str::to_owned))
                            .collect(),
                    ),
                    _ => None,
                })
                .collect();
            Ok(rows)
        })
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        let _ = admin(
            &self.admin,
            format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}
