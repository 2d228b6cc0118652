//! A PostgreSQL cluster of a test's own, serving TLS: `initdb` in a
//! temporary folder, started with `pg_ctl` on a free loopback port, with a
//! certificate for 127.0.0.1 and localhost issued by a CA made for the test
//! ([`TestCa`]). The machine's shared Postgres is never touched. As root,
//! the cluster runs as the `postgres` user (Postgres refuses root). It is
//! stopped and removed on drop.

use std::{
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use crate::smtp::TestCa;

pub struct PrivatePostgres {
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
    /// The CA that issued the server's certificate: what a client trusts
    /// (`sslrootcert`).
    pub ca: TestCa,
}

/// Run `cmd`; panic with its output if it fails.
fn run(mut cmd: Command, what: &str) {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

impl PrivatePostgres {
    /// `initdb`, certificates and `pg_ctl start`, with TLS on and required:
    /// every TCP connection must use TLS (`hostssl` only in `pg_hba.conf`).
    pub fn start_with_tls() -> Self {
        let bin = Command::new("pg_config")
            .arg("--bindir")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            .expect("pg_config --bindir (the PostgreSQL server binaries: initdb, pg_ctl)");
        let dir = std::env::temp_dir().join(format!("i9-pg-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("cluster folder");
        let as_postgres = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let ca = TestCa::new();
        let pg = Self {
            port,
            dir,
            bin,
            as_postgres,
            ca,
        };
        pg.give_to_postgres(&pg.dir);
        let data = pg.data();
        run(
            pg.command(
                "initdb",
                &["-D", &data, "-A", "trust", "-U", "postgres", "-E", "UTF8"],
            ),
            "initdb",
        );
        // The server's certificate and key, its own (a key must be 0600).
        for (from, to) in [
            (pg.ca.cert_file(), "server.crt"),
            (pg.ca.key_file(), "server.key"),
        ] {
            let to = pg.data_dir().join(to);
            std::fs::copy(from, &to).expect("copy the certificate");
            std::fs::set_permissions(
                &to,
                <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600),
            )
            .expect("chmod 0600");
            pg.give_to_postgres(&to);
        }
        pg.write_hba("local all all trust\nhostssl all all 127.0.0.1/32 trust\n");
        pg.pg_ctl(&["start"], true);
        pg
    }

    /// Restart the cluster without TLS, taking plain TCP connections.
    pub fn restart_without_tls(&self) {
        self.write_hba("local all all trust\nhost all all 127.0.0.1/32 trust\n");
        self.pg_ctl(&["-m", "fast", "restart"], false);
    }

    /// The URL of database `database` at `host` (127.0.0.1 or localhost),
    /// with `query` (`sslmode=...`) appended.
    pub fn url(&self, host: &str, database: &str, query: &str) -> String {
        format!(
            "postgres://postgres@{host}:{}/{database}?{query}",
            self.port
        )
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn data(&self) -> String {
        self.data_dir().display().to_string()
    }

    /// A server program, as the `postgres` user when we are root.
    fn command(&self, program: &str, args: &[&str]) -> Command {
        let path = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        cmd.args(args);
        cmd
    }

    fn pg_ctl(&self, action: &[&str], tls: bool) {
        let data = self.data();
        let log = self.dir.join("postgres.log").display().to_string();
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c ssl={}",
            self.port,
            self.dir.display(),
            if tls { "on" } else { "off" }
        );
        let mut args = vec!["-D", &data, "-l", &log, "-w", "-t", "60", "-o", &options];
        args.extend_from_slice(action);
        let mut cmd = self.command("pg_ctl", &args);
        // pg_ctl's child keeps our pipes open: let its output go to the log.
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let status = cmd.status().expect("pg_ctl runs");
        assert!(
            status.success(),
            "pg_ctl {action:?} failed: {}",
            std::fs::read_to_string(self.dir.join("postgres.log")).unwrap_or_default()
        );
    }

    fn write_hba(&self, rules: &str) {
        let hba = self.data_dir().join("pg_hba.conf");
        std::fs::write(&hba, rules).expect("pg_hba.conf");
        self.give_to_postgres(&hba);
    }

    fn give_to_postgres(&self, path: &Path) {
        if self.as_postgres {
            let mut c = Command::new("chown");
            c.arg("-R").arg("postgres:postgres").arg(path);
            run(c, "chown");
        }
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
