//! A throwaway PostgreSQL server for the store tests: Debian's binaries
//! (`.ci/run` installs the `postgresql` package), a fresh cluster in a
//! temporary directory listening on 127.0.0.1 only, stopped when the guard
//! drops. `MUSTER_TEST_POSTGRES=postgres://…` uses a running server instead.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A PostgreSQL server for one test; stopped on drop when this started it.
pub struct Postgres {
    /// Where to connect: a database of its own.
    pub url: String,
    started: Option<(PathBuf, tempfile::TempDir)>,
}

fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| dirs.flatten().map(|d| d.path().join("bin")).collect())
        .unwrap_or_default();
    found.retain(|d| d.join("initdb").exists());
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!(
            "no PostgreSQL server binaries under /usr/lib/postgresql: install Debian's package \
             (`apt-get install postgresql`, as .ci/run does) or set MUSTER_TEST_POSTGRES=postgres://…"
        )
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `program args…`, as the `postgres` user when this runs as root
/// (PostgreSQL refuses to run as root).
fn run(program: &Path, args: &[&str]) {
    let mut cmd = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    let out = cmd.args(args).output().expect("run a PostgreSQL program");
    assert!(
        out.status.success(),
        "{} {args:?}: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A certificate authority and a server certificate for `localhost` and
/// 127.0.0.1 it signed, made with Debian's `openssl` in `dir`: `ca.pem`,
/// `server.pem`, `server.key`.
fn make_certs(dir: &Path) {
    let sh = format!(
        "set -e; cd {dir}; \
         openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=muster-test-ca \
           -keyout ca.key -out ca.pem 2>/dev/null; \
         openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
           -keyout server.key -out server.csr 2>/dev/null; \
         printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > ext.cnf; \
         openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
           -days 2 -extfile ext.cnf -out server.pem 2>/dev/null; \
         chmod 600 server.key",
        dir = dir.display()
    );
    let out = Command::new("sh").args(["-c", &sh]).output().expect("sh");
    assert!(
        out.status.success(),
        "making certificates with openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Postgres {
    /// A server with a fresh database `name`.
    pub fn start(name: &str) -> Self {
        Self::start_with(name, false)
    }

    /// A server that takes TLS connections only (plain ones are refused
    /// by its `pg_hba.conf`), its certificate for `localhost` signed by the
    /// CA in [`Postgres::ca`]. Never a running server's.
    pub fn start_tls(name: &str) -> Self {
        Self::start_with(name, true)
    }

    /// The PEM file of the CA that signed a [`Postgres::start_tls`]
    /// server's certificate.
    pub fn ca(&self) -> PathBuf {
        let (_, dir) = self.started.as_ref().expect("a server this test started");
        dir.path().join("certs/ca.pem")
    }

    fn start_with(name: &str, tls: bool) -> Self {
        if let Ok(url) = std::env::var("MUSTER_TEST_POSTGRES")
            && !tls
        {
            psql(&url, &format!("DROP DATABASE IF EXISTS {name}"));
            psql(&url, &format!("CREATE DATABASE {name}"));
            let base = url.rsplit_once('/').map_or(url.as_str(), |(b, _)| b);
            return Self {
                url: format!("{base}/{name}"),
                started: None,
            };
        }
        let bin = bin_dir();
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(ok.success());
        }
        let data_s = data.to_string_lossy().into_owned();
        run(
            &bin.join("initdb"),
            &["-D", &data_s, "-A", "trust", "-U", "muster", "--no-sync"],
        );
        let port = free_port();
        let mut options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off",
            dir.path().display()
        );
        let admin_tls = if tls {
            let certs = dir.path().join("certs");
            std::fs::create_dir(&certs).expect("certs dir");
            make_certs(&certs);
            if is_root() {
                let ok = Command::new("chown")
                    .args(["-R", "postgres"])
                    .arg(&certs)
                    .status()
                    .expect("chown");
                assert!(ok.success());
            }
            // TLS from 127.0.0.1 only; the Unix socket stays for nothing.
            std::fs::write(
                data.join("pg_hba.conf"),
                "hostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
            )
            .expect("write pg_hba.conf");
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={c}/server.pem -c ssl_key_file={c}/server.key",
                c = certs.display()
            ));
            "?sslmode=require"
        } else {
            ""
        };
        let log = dir.path().join("log").to_string_lossy().into_owned();
        run(
            &bin.join("pg_ctl"),
            &["-D", &data_s, "-o", &options, "-l", &log, "-w", "start"],
        );
        let admin = format!("postgres://muster@127.0.0.1:{port}/postgres{admin_tls}");
        let server = Self {
            url: format!("postgres://muster@127.0.0.1:{port}/{name}"),
            started: Some((bin, dir)),
        };
        psql(&admin, &format!("CREATE DATABASE {name}"));
        server
    }
}

/// Runs one statement through `psql`.
pub fn psql(url: &str, sql: &str) {
    let out = Command::new("psql")
        .args([url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql])
        .output()
        .expect("psql (Debian's postgresql-client)");
    assert!(
        out.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some((bin, dir)) = &self.started {
            let data = dir.path().join("data").to_string_lossy().into_owned();
            let mut cmd = if is_root() {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(bin.join("pg_ctl"));
                c
            } else {
                Command::new(bin.join("pg_ctl"))
            };
            let _ = cmd
                .args(["-D", &data, "-m", "immediate", "-w", "stop"])
                .output();
        }
    }
}
