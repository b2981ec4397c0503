//! External evaluators: a command that reads a partition as JSON on stdin
//! and prints one line, `{"valid": true, "throughput": 1234.5}` or
//! `{"valid": false, "reason": "..."}`. Under `minimize step_time` it
//! reports `"step_time_s"` (seconds, beside or instead of `throughput`),
//! scored as one over it. A crash, a timeout or unreadable output makes an
//! invalid sample whose reason is kept.

use super::{Evaluate, Verdict};
use mcm_core::graph::Graph;
use mcm_core::problem::{partition_json, Metric, Placement};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct External {
    /// Run by `sh -c`, in `dir`.
    pub command: String,
    pub dir: PathBuf,
    pub timeout: Duration,
    graph: Arc<Graph>,
    num_chips: usize,
    /// The objective's metric, which says the figure to read.
    metric: Metric,
}

impl External {
    pub fn new(command: &str, dir: PathBuf, timeout: Duration, graph: Arc<Graph>, num_chips: usize) -> External {
        External {
            command: command.to_string(),
            // `Path::parent` of a bare file name is "", where no command starts.
            dir: if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            },
            timeout,
            graph,
            num_chips,
            metric: Metric::Throughput,
        }
    }

    /// Reads the figure of `metric` from the evaluator's replies.
    pub fn for_metric(mut self, metric: Metric) -> External {
        self.metric = metric;
        self
    }

    fn run(&self, input: &[u8]) -> Result<String, String> {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(&self.command)
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            // Its own process group, so a timeout kills what it started too.
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start evaluator `{}`: {e}", self.command))?;
        // Feed stdin and drain the outputs on threads: a child that does not
        // read its input or fills a pipe must not block us past the timeout.
        let mut stdin = child.stdin.take();
        let input = input.to_vec();
        let writer = std::thread::spawn(move || {
            if let Some(s) = stdin.as_mut() {
                let _ = s.write_all(&input);
            }
        });
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let started = Instant::now();
        let status = wait(&mut child, self.timeout);
        // The writer is not joined: it blocks while a process that does not
        // read holds the evaluator's stdin open (one it left running, say).
        drop(writer);
        let status = match status {
            Some(s) => s,
            None => {
                kill(&mut child);
                return Err(format!("evaluator timed out after {:.1} s", self.timeout.as_secs_f64()));
            }
        };
        // A process it left running may hold the pipes open (`sleep 100 &
        // echo ...`): wait for their end no longer than the timeout's rest.
        let rest = || {
            self.timeout
                .saturating_sub(started.elapsed())
                .max(Duration::from_millis(100))
        };
        let (Ok(stdout), Ok(stderr)) = (out.recv_timeout(rest()), err.recv_timeout(rest())) else {
            // What holds them goes: its group, so that neither it nor our
            // readers outlive the sample.
            kill(&mut child);
            return Err(format!(
                "evaluator exited but left its output open past the timeout of {:.1} s",
                self.timeout.as_secs_f64()
            ));
        };
        if !status.success() {
            let tail = last_line(&stderr);
            return Err(match status.code() {
                Some(code) => format!("evaluator exited with status {code}{tail}"),
                None => format!("evaluator was killed by a signal{tail}"),
            });
        }
        Ok(stdout)
    }
}

impl Evaluate for External {
    fn evaluate(&self, chips: &[u32]) -> Verdict {
        let pl = Placement::new(chips.to_vec());
        let input = partition_json(&pl, &self.graph, self.num_chips).to_string() + "\n";
        match self.run(input.as_bytes()) {
            Ok(stdout) => parse_reply(&stdout, self.metric),
            Err(reason) => Verdict::Invalid { reason },
        }
    }
}

/// Reads the evaluator's one line of JSON; the score is the throughput, or
/// under `minimize step_time` one over `step_time_s`.
pub fn parse_reply(stdout: &str, metric: Metric) -> Verdict {
    let bad = |why: &str| Verdict::Invalid {
        reason: format!("unreadable evaluator output ({why}): {}", excerpt(stdout)),
    };
    let Some(line) = stdout.lines().rev().find(|l| !l.trim().is_empty()) else {
        return bad("nothing printed");
    };
    let v: serde_json::Value = match serde_json::from_str(line.trim()) {
        Ok(v) => v,
        Err(_) => return bad("not JSON"),
    };
    let number = |key: &str| {
        v.get(key)
            .and_then(|x| x.as_f64())
            .filter(|t| t.is_finite() && *t > 0.0)
    };
    match v.get("valid").and_then(|x| x.as_bool()) {
        Some(true) if metric == Metric::StepTime => match number("step_time_s") {
            Some(t) => Verdict::Valid { throughput: 1.0 / t },
            None => bad("`step_time_s` must be a positive number of seconds under `minimize step_time`"),
        },
        Some(true) => match number("throughput") {
            Some(t) => Verdict::Valid { throughput: t },
            None if v.get("step_time_s").is_some() => {
                bad("`throughput` must be a positive number; `step_time_s` is read only under `minimize step_time`")
            }
            None => bad("`throughput` must be a positive number"),
        },
        Some(false) => Verdict::Invalid {
            reason: v
                .get("reason")
                .and_then(|r| r.as_str())
                .unwrap_or("the evaluator gave no reason")
                .to_string(),
        },
        None => bad("no boolean `valid`"),
    }
}

fn excerpt(s: &str) -> String {
    let t = s.trim();
    let mut e: String = t.chars().take(80).collect();
    if t.chars().count() > 80 {
        e.push('…');
    }
    format!("{e:?}")
}

fn last_line(stderr: &str) -> String {
    match stderr.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(l) => format!(": {}", l.trim()),
        None => String::new(),
    }
}

/// Reads a pipe to its end on a thread; the text arrives on the channel.
fn drain<R: Read + Send + 'static>(r: Option<R>) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(mut r) = r {
            // Keep at most 1 MiB: the reply is one line.
            let _ = r.by_ref().take(1 << 20).read_to_end(&mut s);
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        }
        let _ = tx.send(String::from_utf8_lossy(&s).into_owned());
    });
    rx
}

fn wait(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if start.elapsed() >= timeout => return None,
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(_) => return None,
        }
    }
}

/// Kills the evaluator's process group and reaps the evaluator.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    {
        // SAFETY: kill(2) on the process group we created; no memory is shared.
        unsafe {
            libc::kill(-(child.id() as i32), libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_objective_says_which_figure_is_read() {
        let both = r#"{"valid": true, "throughput": 8.0, "step_time_s": 0.5}"#;
        assert_eq!(
            parse_reply(both, Metric::Throughput),
            Verdict::Valid { throughput: 8.0 }
        );
        assert_eq!(parse_reply(both, Metric::StepTime), Verdict::Valid { throughput: 2.0 });
        let step = r#"{"valid": true, "step_time_s": 0.25}"#;
        assert_eq!(parse_reply(step, Metric::StepTime), Verdict::Valid { throughput: 4.0 });
        let Verdict::Invalid { reason } = parse_reply(step, Metric::Throughput) else {
            panic!("a step time is no throughput")
        };
        assert!(reason.contains("only under `minimize step_time`"), "{reason}");
        let Verdict::Invalid { reason } = parse_reply(r#"{"valid": true, "throughput": 3}"#, Metric::StepTime) else {
            panic!("a throughput is no step time")
        };
        assert!(reason.contains("`step_time_s` must be a positive number"), "{reason}");
    }
}
