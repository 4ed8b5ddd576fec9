//! Starting a stdio MCP server: its command with muster's environment
//! (minus muster's own secrets) and the block's `env` filled, its `cwd`,
//! piped stdio, its stderr kept to quote, and a process group of its own
//! tied to muster, so nothing the server starts outlives the connection or
//! muster. It decides how a server is started and ended; it never speaks
//! MCP.

#[cfg(unix)]
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;

use super::{Failure, ServerSpec};
use crate::contract::FailureReason;

/// No descriptor is kept where there are none.
#[cfg(not(unix))]
type OwnedFd = std::convert::Infallible;

/// `spec.env` with every `${VAR}` filled from muster's environment.
///
/// # Errors
/// The first variable that is not set, as a [`Failure`].
pub(crate) fn expanded_env(spec: &ServerSpec) -> Result<Vec<(String, String)>, Failure> {
    spec.env
        .iter()
        .map(|(k, v)| {
            crate::policy::expand_vars(v, &spec.name, &format!("env.{k}"))
                .map(|v| (k.clone(), v))
                .map_err(|e| Failure::unexpanded(&spec.name, &e))
        })
        .collect()
}

/// A started server: its process, its piped stdio and its process group.
pub(crate) struct Spawned {
    pub child: tokio::process::Child,
    pub stdin: tokio::process::ChildStdin,
    pub stdout: tokio::process::ChildStdout,
    pub stderr: tokio::process::ChildStderr,
    /// Kills the server's whole process group when dropped.
    pub group: ProcessGroup,
}

/// A started server kept for as long as it is used: dropping it kills the
/// process and its group.
pub(crate) struct ProcessGroupHandle {
    _child: tokio::process::Child,
    _group: ProcessGroup,
}

impl ProcessGroupHandle {
    /// Keeps `child` and its `group` together.
    pub fn new(group: ProcessGroup, child: tokio::process::Child) -> Self {
        Self {
            _child: child,
            _group: group,
        }
    }
}

/// Reads a server's `stderr` to its end in a task, keeping its last `keep`
/// bytes in `buf` (to quote when it fails) and showing each chunk to
/// `also` first.
pub(crate) fn keep_stderr(
    mut stderr: tokio::process::ChildStderr,
    buf: Arc<Mutex<Vec<u8>>>,
    keep: usize,
    mut also: impl FnMut(&[u8]) + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut chunk = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            also(&chunk[..n]);
            let mut buf = buf.lock().unwrap_or_else(|e| e.into_inner());
            buf.extend_from_slice(&chunk[..n]);
            let excess = buf.len().saturating_sub(keep);
            buf.drain(..excess);
        }
    })
}

/// Starts the server in `spec` with piped stdio, in a process group of its
/// own tied to muster (see [`tie_to_muster`]): nothing it starts outlives
/// the [`ProcessGroup`] or muster.
pub(crate) fn spawn(spec: &ServerSpec) -> Result<Spawned, Failure> {
    let Some((program, args)) = spec.command.split_first() else {
        return Err(Failure {
            reason: FailureReason::CannotStart,
            help: Some("give `command = [\"program\", \"arg\", ...]`".into()),
            ..Failure::new("has an empty command")
        });
    };
    let env = expanded_env(spec)?;
    let mut cmd = tokio::process::Command::new(program);
    for secret in crate::policy::SECRET_VARIABLES {
        cmd.env_remove(secret);
    }
    cmd.args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so whatever the server starts (a wrapper such
    // as `sh -c` or `npx` runs the real server as a child) ends with it.
    #[cfg(unix)]
    cmd.process_group(0);
    let tie = tie_to_muster(&mut cmd);
    // A mark every process the server starts inherits, so one that leaves
    // the group (`setsid`, a daemon's double fork) is still found.
    let mark = ProcessGroup::new_mark();
    cmd.env(MARK_VAR, &mark);
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().map_err(|e| Failure {
        reason: FailureReason::CannotStart,
        help: Some("check the block's `command`".into()),
        ..Failure::new(format!("cannot start `{program}`: {e}"))
    })?;
    let group = ProcessGroup {
        leader: child.id(),
        mark,
        // The read end now lives in the watchdog alone.
        _tie: tie.map(|(_read, write)| write),
    };
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(Failure {
            reason: FailureReason::CannotStart,
            ..Failure::new("started without piped stdio")
        });
    };
    Ok(Spawned {
        child,
        stdin,
        stdout,
        stderr,
        group,
    })
}

/// Ties the server to muster, so it dies with muster even when muster is
/// killed with `kill -9` and cannot clean up (a server that ignores the
/// end of its stdin would otherwise run on). Two ways, Linux only:
///
/// - The server is started with `PR_SET_PDEATHSIG`: the kernel kills it
///   when the thread that started it ends (a runtime worker that outlives
///   every session it starts, or the caller's own for
///   `discover::call_tool`).
/// - Just before exec, a watchdog is forked into the server's process
///   group. It holds nothing but the read end of a pipe whose write end
///   only muster holds, and kills the whole group when that end closes:
///   muster died, or the session ended. This reaches what the server
///   started in its group (a wrapper's real server), which the signal does
///   not.
///
/// Returns the pipe's read and write ends: the read end must stay open
/// until the server is spawned, then muster closes it and keeps the write
/// end for the session. Elsewhere the process group and the mark still
/// clean up on every ending muster lives through.
#[cfg(target_os = "linux")]
fn tie_to_muster(cmd: &mut tokio::process::Command) -> Option<(OwnedFd, OwnedFd)> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
    let mut fds = [-1; 2];
    // SAFETY: pipe2(2) writes two new descriptors into `fds`.
    let pipe = (unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0).then(|| {
        // SAFETY: both are new descriptors that nothing else owns.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    });
    // Without a pipe, the signal alone still covers the server itself.
    let watched = pipe.as_ref().map(|(read, _)| read.as_raw_fd());
    // SAFETY: the closure runs in the forked child before exec. It calls
    // only async-signal-safe system calls (prctl, getppid, setpgid, getpid,
    // fork) and builds its errors without allocating; the watchdog it forks
    // calls only close, close_range, getrlimit, read, kill and _exit.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // muster died before the request took: the signal will never
            // come, so do not start.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            let Some(watched) = watched else {
                return Ok(());
            };
            // The group the watchdog kills is this one, whether or not the
            // process_group(0) request has been applied yet.
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let server = libc::getpid();
            match libc::fork() {
                -1 => Err(std::io::Error::last_os_error()),
                0 => watchdog(watched, server),
                _ => Ok(()),
            }
        });
    }
    pipe
}

#[cfg(not(target_os = "linux"))]
fn tie_to_muster(_: &mut tokio::process::Command) -> Option<(OwnedFd, OwnedFd)> {
    None
}

/// The watchdog's whole life: close every descriptor but `watched` (the
/// server's stdio, whose copies would keep muster from seeing the server's
/// stdout end, and std's exec-error pipe, whose copy would keep `spawn`
/// waiting), wait for `watched` to reach its end, kill the server's group
/// (itself included), exit.
///
/// # Safety
/// Only in a child forked just before exec: it never returns.
#[cfg(target_os = "linux")]
unsafe fn watchdog(watched: libc::c_int, server: libc::pid_t) -> ! {
    // SAFETY: plain system calls on descriptors and pids of this process.
    unsafe {
        for fd in 0..3 {
            if fd != watched {
                libc::close(fd);
            }
        }
        let below = if watched > 3 {
            libc::syscall(libc::SYS_close_range, 3u32, (watched - 1) as u32, 0u32)
        } else {
            0
        };
        let above = libc::syscall(libc::SYS_close_range, (watched + 1) as u32, u32::MAX, 0u32);
        if below != 0 || above != 0 {
            // No close_range (Linux before 5.9): close one by one.
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            let last = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur.min(1 << 20) as libc::c_int
            } else {
                1 << 16
            };
            for fd in 3..last {
                if fd != watched {
                    libc::close(fd);
                }
            }
        }
        // Nothing is ever written: the read ends when the last write end
        // closes.
        let mut byte = 0u8;
        loop {
            let n = libc::read(watched, (&raw mut byte).cast(), 1);
            if n > 0 || (n < 0 && *libc::__errno_location() == libc::EINTR) {
                continue;
            }
            break;
        }
        if server > 1 {
            libc::kill(-server, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}

/// The environment variable that marks every process a server starts.
pub(crate) const MARK_VAR: &str = "MUSTER_DISCOVER_MARK";

/// The process group of a started server (its leader's pid), and the mark
/// in its environment. Dropping it kills the whole group and then every
/// process still carrying the mark: a timed-out, failed, closed or
/// interrupted server leaves nothing running, grandchildren that called
/// `setsid` included. Only a process that clears its own environment
/// escapes.
pub(crate) struct ProcessGroup {
    leader: Option<u32>,
    mark: String,
    /// The write end of the pipe the group's watchdog waits on (see
    /// [`tie_to_muster`]); closing it ends the group too.
    _tie: Option<OwnedFd>,
}

impl ProcessGroup {
    /// A mark no other server of any muster process has.
    fn new_mark() -> String {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}-{n}-{nanos}", std::process::id())
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.leader.and_then(|p| i32::try_from(p).ok())
            && pid > 0
        {
            // SAFETY: kill(2) with a negative pid signals the group the
            // server was started in (process_group(0) made it the leader);
            // it touches no memory of ours.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        #[cfg(target_os = "linux")]
        kill_marked(&format!("{MARK_VAR}={}", self.mark));
    }
}

/// Kills every process whose environment holds `entry` (`NAME=value`),
/// looking again while the last look found one: a process may fork while
/// it is being killed.
#[cfg(target_os = "linux")]
fn kill_marked(entry: &str) {
    let me = std::process::id();
    for _ in 0..5 {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut found = false;
        for pid in dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != me)
        {
            // A zombie's environment reads empty; one that is not ours
            // cannot be read at all.
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if environ.split(|&b| b == 0).any(|e| e == entry.as_bytes())
                && let Ok(pid) = i32::try_from(pid)
            {
                found = true;
                // SAFETY: kill(2) on a pid we just found; touches no memory.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        if !found {
            return;
        }
    }
}
