//! The remote backend against a real embedding server: infinity-emb serving the same
//! all-MiniLM-L6-v2 folder on 127.0.0.1 (installed into .venv-server by scripts/test.sh), with a
//! logging front (tests/reference/embed_proxy.py) that can throttle, slow down or die.

mod common;

use common::{free_port, Running};

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Python environment with infinity-emb, or None (after the SKIP line).
fn server_python(test: &str) -> Option<PathBuf> {
    let py = std::env::var_os("CHUNKSCOPE_SERVER_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join(".venv-server/bin/python"));
    let ok = Command::new(&py)
        .args(["-c", "import infinity_emb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        common::skip(
            test,
            &format!(
                "{} cannot import infinity_emb (scripts/test.sh installs it into .venv-server)",
                py.display()
            ),
        );
        return None;
    }
    Some(py)
}

fn wait_until_up(url: &str, what: &str, child: &mut Child) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(180) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited early: {status}");
        }
        if ureq_get(url) {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("{what} did not answer {url} within 180 s");
}

fn ureq_get(url: &str) -> bool {
    // A plain HTTP GET over a socket (the test does not need an HTTP client crate).
    use std::io::{Read, Write};
    let rest = url.trim_start_matches("http://");
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(mut s) = std::net::TcpStream::connect(host) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let req = format!("GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.0 200") || buf.starts_with("HTTP/1.1 200")
}

/// infinity-emb serving the default model folder under its hub id.
fn start_infinity(py: &Path) -> (Running, String) {
    let port = free_port();
    let bin = py.parent().unwrap().join("infinity_emb");
    let mut child = Command::new(bin)
        .args(["v2", "--model-id"])
        .arg(&common::model().dir)
        .args([
            "--served-model-name",
            "sentence-transformers/all-MiniLM-L6-v2",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--engine",
            "torch",
            "--device",
            "cpu",
            "--url-prefix",
            "/v1",
        ])
        .env("INFINITY_ANONYMOUS_USAGE_STATS", "0")
        .env("HF_HUB_OFFLINE", "1")
        .env("DO_NOT_TRACK", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start infinity_emb");
    let base = format!("http://127.0.0.1:{port}/v1");
    wait_until_up(&format!("{base}/models"), "infinity_emb", &mut child);
    (Running(child), base)
}

/// The logging front on a fresh port (or `port`), forwarding to `upstream`.
fn start_proxy(
    py: &Path,
    upstream: &str,
    log: &Path,
    port: Option<u16>,
    extra: &[&str],
) -> (Running, String) {
    let port = port.unwrap_or_else(free_port);
    let upstream_root = upstream.trim_end_matches("/v1");
    let mut child = Command::new(py)
        .arg(common::repo().join("tests/reference/embed_proxy.py"))
        .arg(port.to_string())
        .arg(upstream_root)
        .arg(log)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the proxy");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    (Running(child), format!("http://127.0.0.1:{port}/v1"))
}

struct Run {
    ok: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `chunkscope COMMAND examples --model MODEL` with `flags`, its caches in `cache`.
fn chunkscope(command: &str, cache: &Path, flags: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_chunkscope"))
        .arg(command)
        .arg(common::repo().join("examples"))
        .arg("--model")
        .arg(&common::model().dir)
        .args(flags)
        .env("CHUNKSCOPE_CACHE_DIR", cache)
        .output()
        .unwrap();
    Run {
        code: out.status.code(),
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    }
}

/// `chunkscope embed examples` with `flags`, its caches in `cache`.
fn embed(cache: &Path, flags: &[&str]) -> Run {
    chunkscope("embed", cache, flags)
}

fn vectors(jsonl: &str) -> Vec<(String, Vec<f32>)> {
    jsonl
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let key = format!("{}#{}", v["file"].as_str().unwrap(), v["index"]);
            let vec = v["vector"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect();
            (key, vec)
        })
        .collect()
}

/// Every input the server answered with vectors (the dimension probe left out), per log line.
fn answered(log: &Path) -> Vec<(f64, u64, Vec<String>)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let inputs = v["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .filter(|s| s != "dimension probe")
                .collect();
            (
                v["t"].as_f64().unwrap(),
                v["status"].as_u64().unwrap(),
                inputs,
            )
        })
        .collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chunkscope-remote-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn remote_backend_against_a_real_server() {
    let Some(py) = server_python("remote_backend_against_a_real_server") else {
        return;
    };
    let (_server, base) = start_infinity(&py);
    let work = temp("main");
    let flags = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["--preset", "langchain-tokens", "--window", "st"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };

    // 1. The server's vectors agree with the local backend's (infinity reads 256 tokens, as
    //    sentence-transformers does: window st).
    let local = embed(&work.join("local"), &refs(&flags(&[])));
    assert!(local.ok, "{}", local.stderr);
    let remote_flags = flags(&["--endpoint", &base]);
    let remote = embed(&work.join("remote"), &refs(&remote_flags));
    assert!(remote.ok, "{}", remote.stderr);
    let (a, b) = (vectors(&local.stdout), vectors(&remote.stdout));
    assert_eq!(a.len(), b.len());
    assert!(a.len() > 20, "{} chunks", a.len());
    for ((ka, va), (kb, vb)) in a.iter().zip(&b) {
        assert_eq!(ka, kb);
        let cos = chunkscope_core::embed::cosine(va, vb);
        assert!(cos >= 0.9999, "{ka}: cosine {cos}");
    }

    // 2. A throttling front: 429 with Retry-After 1.5 s twice; the client waits and completes.
    let log = work.join("throttle.log");
    let (_proxy, url) = start_proxy(
        &py,
        &base,
        &log,
        None,
        &["--throttle", "2", "--retry-after", "1.5"],
    );
    let cfg = work.join("serial.toml");
    std::fs::write(&cfg, "[model]\nbatch = 8\nin_flight = 1\nmax_retries = 4\n").unwrap();
    let cfg_s = cfg.to_str().unwrap().to_string();
    let throttled = embed(
        &work.join("throttled"),
        &refs(&flags(&["--endpoint", &url, "--config", &cfg_s])),
    );
    assert!(throttled.ok, "{}", throttled.stderr);
    assert_eq!(vectors(&throttled.stdout).len(), a.len());
    let entries = answered(&log);
    assert_eq!(entries[0].1, 429);
    assert_eq!(entries[1].1, 429);
    assert_eq!(entries[2].1, 200);
    let waited = entries[2].0 - entries[1].0;
    assert!(
        waited >= 1.4,
        "retried after {waited:.2} s, Retry-After said 1.5"
    );

    // 3. A server that dies after a few answers: a clear error naming the endpoint, the vectors
    //    received kept; after a restart the rest is embedded and nothing twice.
    let log = work.join("die.log");
    let port = free_port();
    let cfg = work.join("die.toml");
    std::fs::write(
        &cfg,
        "[model]\nbatch = 4\nin_flight = 1\nmax_retries = 1\ntimeout_s = 5\n",
    )
    .unwrap();
    let cfg_s = cfg.to_str().unwrap().to_string();
    let cache = work.join("resume");
    let die_flags = flags(&[
        "--endpoint",
        &format!("http://127.0.0.1:{port}/v1"),
        "--config",
        &cfg_s,
    ]);
    let die_args = refs(&die_flags);
    {
        let _dying = start_proxy(&py, &base, &log, Some(port), &["--die-after", "4"]);
        let first = embed(&cache, &die_args);
        assert!(!first.ok, "the run should fail when the server dies");
        assert!(
            first
                .stderr
                .contains(&format!("127.0.0.1:{port}/v1/embeddings")),
            "{}",
            first.stderr
        );
        assert!(
            first.stderr.contains("rerun embeds only the rest"),
            "{}",
            first.stderr
        );
    }
    let before: usize = answered(&log).iter().map(|e| e.2.len()).sum();
    assert!(before > 0 && before < a.len(), "{before} of {}", a.len());
    let (again, _) = start_proxy(&py, &base, &log, Some(port), &[]);
    let second = embed(&cache, &die_args);
    assert!(second.ok, "{}", second.stderr);
    let resumed = vectors(&second.stdout);
    assert_eq!(resumed.len(), a.len());
    for ((k, v), (_, want)) in resumed.iter().zip(&a) {
        assert!(chunkscope_core::embed::cosine(v, want) >= 0.9999, "{k}");
    }
    let mut times: HashMap<String, usize> = HashMap::new();
    for (_, status, inputs) in answered(&log) {
        if status == 200 {
            for i in inputs {
                *times.entry(i).or_default() += 1;
            }
        }
    }
    let twice: Vec<_> = times.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "embedded twice: {twice:?}");

    // 3b. Each request answers for itself: with every chunk vector cached, a server that dies
    //     after the dimension probe fails the query's vector alone. The vector column says why,
    //     BM25 still answers, and the exit is clean.
    drop(again);
    let (_once, _) = start_proxy(&py, &base, &log, Some(port), &["--die-after", "1"]);
    let mut args = vec!["which key rotates every ninety days"];
    args.extend(die_args.iter().copied());
    let q = chunkscope("query", &cache, &args);
    assert!(q.ok, "{}", q.stderr);
    let after_vector = q.stdout.split("vector:").nth(1).unwrap_or_default();
    assert!(
        after_vector
            .trim_start()
            .starts_with("vector search failed:")
            && after_vector.contains(&format!("127.0.0.1:{port}")),
        "{}",
        q.stdout
    );
    let bm25 = q.stdout.split("vector:").next().unwrap_or_default();
    assert!(
        bm25.lines().count() > 2,
        "BM25 answered nothing: {}",
        q.stdout
    );

    // 4. A server that refuses inputs over its window: chunks over it are counted as rejected
    //    (not as tails), and --fail-on-tail fails on them.
    let cfg = work.join("reject.toml");
    std::fs::write(&cfg, "[model]\noverflow = \"reject\"\n").unwrap();
    let cfg_s = cfg.to_str().unwrap();
    let audit_with = |extra: &str| {
        chunkscope(
            "audit",
            &work.join("audit"),
            &["--endpoint", &base, "--config", cfg_s, extra],
        )
    };
    let audit = audit_with("--json");
    assert!(audit.ok);
    let report: serde_json::Value = serde_json::from_str(&audit.stdout).unwrap();
    let over = report["total"]["over_window"].as_u64().unwrap();
    assert!(over > 0);
    assert_eq!(report["rejected"].as_u64(), Some(over));
    assert!(report["window_source"]
        .as_str()
        .unwrap()
        .contains("rejects longer inputs"));
    let gate = audit_with("--fail-on-tail");
    assert_eq!(gate.code, Some(1));
    assert!(gate.stderr.contains("rejected by the server"));

    // 5. A server with text-embeddings-inference's /tokenize route: counts that agree with the
    //    model's tokenizer pass quietly; another tokenizer is called out.
    for (tokenizer, differs) in [
        (common::model().dir.join("tokenizer.json"), false),
        (
            common::repo().join("tests/fixtures/tiny/xlm-roberta-e5/tokenizer.json"),
            true,
        ),
    ] {
        let tok_arg = tokenizer.to_str().unwrap().to_string();
        let (_front, url) = start_proxy(
            &py,
            &base,
            &work.join("tokenize.log"),
            None,
            &["--tokenizer", &tok_arg],
        );
        let out = chunkscope("audit", &work.join("audit"), &["--endpoint", &url]);
        assert!(out.ok);
        let stderr = out.stderr;
        assert_eq!(
            stderr.contains("counts differently"),
            differs,
            "{}: {stderr}",
            tokenizer.display()
        );
    }

    // 6. A slow server (3 s per answer) never freezes the workbench: while requests are in
    //    flight the status line says so, a knob turn re-chunks at once and q quits at once.
    if !common::no_tmux() {
        let (_slow, url) = start_proxy(&py, &base, &work.join("slow.log"), None, &["--delay", "3"]);
        let session = format!("chunkscope-remote-{}", std::process::id());
        let cmd = format!(
            "CHUNKSCOPE_CACHE_DIR={} {} {} --model {} --endpoint {url}; echo EXITED-$?; sleep 60",
            work.join("tui").display(),
            env!("CARGO_BIN_EXE_chunkscope"),
            common::repo().join("examples").display(),
            common::model().dir.display(),
        );
        common::start_tmux(&session, 250, 40, &cmd);
        let screen = common::wait_for_screen(
            &session,
            |s| s.contains("requests in flight"),
            "requests in flight",
        );
        assert!(screen.contains(&format!("remote {url}")), "{screen}");
        let pressed = Instant::now();
        common::tmux(&["send-keys", "-t", &session, "p"]);
        common::wait_for_screen(
            &session,
            |s| s.contains("langchain 1500 chars overlap 150"),
            "the preset turned",
        );
        assert!(
            pressed.elapsed() < Duration::from_secs(2),
            "the knob took {:?} behind a slow server",
            pressed.elapsed()
        );
        common::tmux(&["send-keys", "-t", &session, "q"]);
        common::wait_for_screen(&session, |s| s.contains("EXITED-0"), "EXITED-0");
        let _ = common::tmux(&["kill-session", "-t", &session]);
    }
    let _ = std::fs::remove_dir_all(&work);
}
