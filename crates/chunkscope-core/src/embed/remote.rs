//! An embedding server as the embedder: any server speaking the OpenAI-compatible
//! `POST {endpoint}/embeddings` (text-embeddings-inference, vLLM, Ollama, infinity, OpenAI).
//! Inputs go in batches, several requests in flight; 429, 5xx and timeouts are retried with
//! exponential backoff and jitter (a `Retry-After` is obeyed); a run is cancelled between
//! requests. The API key is read from the environment when a request is made and never stored
//! in anything that is written or shown.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::http::json_body;

/// What to do with a text longer than the server's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// The server truncates silently (TEI with auto-truncate, infinity, vLLM, Ollama): the rest
    /// of the text is a tail.
    #[default]
    Truncate,
    /// The server refuses the input (OpenAI, TEI without truncation): the chunk gets no vector.
    Reject,
}

impl std::str::FromStr for Overflow {
    type Err = crate::names::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "truncate" => Ok(Overflow::Truncate),
            "reject" => Ok(Overflow::Reject),
            other => Err(crate::names::UnknownName::new(
                "overflow",
                other,
                "truncate or reject",
            )),
        }
    }
}

/// How to reach the server.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteConfig {
    /// Base URL, e.g. `http://127.0.0.1:8080/v1`; requests go to `{endpoint}/embeddings`.
    pub endpoint: String,
    /// The model name the server knows.
    pub model: String,
    /// The environment variable holding the API key (sent as a bearer token), if any.
    pub api_key_env: Option<String>,
    /// Texts per request.
    pub batch: usize,
    /// Requests in flight at once.
    pub in_flight: usize,
    /// Time allowed for one request.
    pub timeout: Duration,
    /// Retries of one request before the run fails.
    pub max_retries: u32,
    /// What the server does with a text over its window (None: ask the server, else truncate).
    pub overflow: Option<Overflow>,
}

impl RemoteConfig {
    pub fn new(endpoint: &str, model: &str) -> RemoteConfig {
        RemoteConfig {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key_env: None,
            batch: 32,
            in_flight: 4,
            timeout: Duration::from_secs(60),
            max_retries: 6,
            overflow: None,
        }
    }

    /// The cache identity of this server's model (no key, no secrets).
    pub fn model_key(&self) -> String {
        format!("remote {} {}", self.endpoint, self.model)
    }
}

/// What the server says about itself (text-embeddings-inference's `GET /info`); empty for
/// servers without that route.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerInfo {
    pub max_input_length: Option<usize>,
    pub auto_truncate: Option<bool>,
}

/// Counters of a run, for the progress line.
#[derive(Debug, Default)]
pub struct Traffic {
    pub in_flight: AtomicUsize,
    pub retries: AtomicUsize,
}

/// A connected server. Cloning is cheap (the connection pool and counters are shared), which
/// lets each request slot run on a thread of its own that a cancelled run need not wait for.
#[derive(Clone)]
pub struct Remote {
    pub config: RemoteConfig,
    agent: ureq::Agent,
    pub info: ServerInfo,
    pub dim: usize,
    pub traffic: std::sync::Arc<Traffic>,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

/// A failed request, with what the user needs to act on it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteError(pub String);

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RemoteError {}

enum Attempt {
    Done(Vec<Vec<f32>>),
    /// Worth another try, after at least this long (a `Retry-After`), with the reason.
    Retry(Option<Duration>, String),
    Fail(String),
}

impl Remote {
    /// Connect: read the server's `/info` when it has one, and embed one short text to learn the
    /// vector size (and that the endpoint, model and key work).
    pub fn connect(config: RemoteConfig) -> Result<Remote, RemoteError> {
        let agent = ureq::AgentBuilder::new()
            .timeout(config.timeout)
            .max_idle_connections_per_host(config.in_flight.max(1) * 2)
            .build();
        let info = server_info(&agent, &config);
        let mut remote = Remote {
            config,
            agent,
            info,
            dim: 0,
            traffic: Default::default(),
        };
        let stop = AtomicBool::new(false);
        let v = remote.request_with_retries(&["dimension probe"], &stop)?;
        remote.dim = v.first().map_or(0, Vec::len);
        if remote.dim == 0 {
            return Err(RemoteError(format!(
                "{}: the server returned an empty embedding",
                remote.url()
            )));
        }
        Ok(remote)
    }

    pub fn url(&self) -> String {
        format!("{}/embeddings", self.config.endpoint)
    }

    /// Embed `texts` in batches with up to `in_flight` requests at once. `on_batch` receives
    /// each finished batch (positions in `texts` and their vectors) on the calling thread, as
    /// they arrive, and an empty one every 200 ms without an answer; returning false stops the
    /// run (requests in flight are abandoned).
    pub fn embed(
        &self,
        texts: &[&str],
        mut on_batch: impl FnMut(&[usize], Vec<Vec<f32>>) -> bool,
    ) -> Result<bool, RemoteError> {
        use std::sync::Arc;
        let batch = self.config.batch.max(1);
        let batches: Vec<Vec<usize>> = (0..texts.len())
            .collect::<Vec<_>>()
            .chunks(batch)
            .map(<[usize]>::to_vec)
            .collect();
        let inputs: Arc<Vec<Vec<String>>> = Arc::new(
            batches
                .iter()
                .map(|ids| ids.iter().map(|&i| texts[i].to_string()).collect())
                .collect(),
        );
        let next = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel::<(usize, Result<Vec<Vec<f32>>, RemoteError>)>();
        let workers = self.config.in_flight.clamp(1, 64).min(batches.len().max(1));
        for _ in 0..workers {
            let (me, tx) = (self.clone(), tx.clone());
            let (next, stop, inputs) = (Arc::clone(&next), Arc::clone(&stop), Arc::clone(&inputs));
            // Detached: a cancelled run returns at once; a request still in flight finishes
            // on its own and its answer is dropped.
            std::thread::spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let b = next.fetch_add(1, Ordering::Relaxed);
                let Some(batch) = inputs.get(b) else { return };
                let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
                let result = me.request_with_retries(&refs, &stop);
                if tx.send((b, result)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let mut finished = true;
        let mut failure = None;
        let mut received = 0;
        while received < batches.len() {
            // A quiet spell is reported as an empty batch, so the caller can show progress and
            // cancel while requests are slow.
            let (b, result) = match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(got) => got,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if !on_batch(&[], Vec::new()) {
                        finished = false;
                        break;
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            received += 1;
            match result {
                Ok(vs) => {
                    if !on_batch(&batches[b], vs) {
                        finished = false;
                        break;
                    }
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        match failure {
            Some(e) => Err(e),
            None => Ok(finished),
        }
    }

    /// One batch, retried on 429, 5xx and transport errors with exponential backoff and jitter
    /// (a `Retry-After` sets the least wait), until `max_retries` or `stop`.
    fn request_with_retries(
        &self,
        inputs: &[&str],
        stop: &AtomicBool,
    ) -> Result<Vec<Vec<f32>>, RemoteError> {
        let mut attempt = 0u32;
        loop {
            self.traffic.in_flight.fetch_add(1, Ordering::Relaxed);
            let result = self.request(inputs);
            self.traffic.in_flight.fetch_sub(1, Ordering::Relaxed);
            match result {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fail(why) => return Err(RemoteError(why)),
                Attempt::Retry(after, why) => {
                    if attempt >= self.config.max_retries {
                        return Err(RemoteError(format!(
                            "{why} (gave up after {attempt} retries)"
                        )));
                    }
                    attempt += 1;
                    self.traffic.retries.fetch_add(1, Ordering::Relaxed);
                    let wait = after.unwrap_or_default().max(backoff(attempt));
                    log::warn!("{why}; retry {attempt} in {:.1} s", wait.as_secs_f64());
                    let until = Instant::now() + wait;
                    while Instant::now() < until {
                        if stop.load(Ordering::Relaxed) {
                            return Err(RemoteError("cancelled".into()));
                        }
                        std::thread::sleep(Duration::from_millis(20).min(until - Instant::now()));
                    }
                }
            }
        }
    }

    fn request(&self, inputs: &[&str]) -> Attempt {
        let url = self.url();
        let body = serde_json::json!({ "model": self.config.model, "input": inputs });
        let mut req = self
            .agent
            .post(&url)
            .set("Content-Type", "application/json");
        if let Some(var) = &self.config.api_key_env {
            match std::env::var(var) {
                Ok(key) => req = req.set("Authorization", &format!("Bearer {key}")),
                Err(_) => {
                    return Attempt::Fail(format!("{url}: the API key variable {var} is not set"))
                }
            }
        }
        match req.send_string(&body.to_string()) {
            Ok(resp) => match json_body::<Response>(resp) {
                Ok(r) => order(r, inputs.len())
                    .map(Attempt::Done)
                    .unwrap_or_else(|why| Attempt::Fail(format!("{url}: {why}"))),
                Err(e) => Attempt::Retry(None, format!("{url}: unreadable response: {e}")),
            },
            Err(ureq::Error::Status(code, resp)) => {
                let after = resp
                    .header("Retry-After")
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .map(|s| Duration::from_secs_f64(s.clamp(0.0, 300.0)));
                let body = resp.into_string().unwrap_or_default();
                let excerpt: String = body.chars().take(300).collect();
                let why = format!("{url}: status {code}: {}", excerpt.trim());
                if code == 429 || code == 408 || code >= 500 {
                    Attempt::Retry(after, why)
                } else {
                    Attempt::Fail(why)
                }
            }
            Err(ureq::Error::Transport(t)) => Attempt::Retry(None, format!("{url}: {t}")),
        }
    }
}

/// The vectors in input order (servers may answer out of order, with `index`).
fn order(r: Response, n: usize) -> Result<Vec<Vec<f32>>, String> {
    if r.data.len() != n {
        return Err(format!(
            "the server returned {} embeddings for {n} inputs",
            r.data.len()
        ));
    }
    let mut out = vec![Vec::new(); n];
    for (i, item) in r.data.into_iter().enumerate() {
        let at = item.index.unwrap_or(i);
        if at >= n {
            return Err(format!("embedding index {at} out of range"));
        }
        out[at] = item.embedding;
    }
    Ok(out)
}

/// 0.5 s doubling to at most 30 s, with jitter in [50 %, 100 %].
fn backoff(attempt: u32) -> Duration {
    let base = (0.5 * 2f64.powi(attempt.saturating_sub(1) as i32)).min(30.0);
    let nanos = Instant::now().elapsed().subsec_nanos() as u64
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as u64);
    let jitter = 0.5 + (nanos % 1000) as f64 / 2000.0;
    Duration::from_secs_f64(base * jitter)
}

/// Texts whose token counts tell tokenizers apart (casing, accents, CJK, punctuation, numbers).
const TOKENIZE_SAMPLES: &[&str] = &[
    "Rotate the HMAC signing keys every 90 days; don't skip the verification step.",
    "Zarządzanie kluczami: klucze są obracane co dziewięćdziesiąt dni.",
    "密钥每九十天轮换一次。",
];

/// The server's token counts (text-embeddings-inference's `POST /tokenize`, specials added)
/// compared with the local tokenizer's; `None` when they agree or the server has no such route.
fn tokenizer_mismatch(
    agent: &ureq::Agent,
    config: &RemoteConfig,
    local: &dyn Fn(&str) -> usize,
) -> Option<String> {
    let base = config.endpoint.trim_end_matches("/v1");
    let body = serde_json::json!({ "inputs": TOKENIZE_SAMPLES, "add_special_tokens": true });
    let resp = agent
        .post(&format!("{base}/tokenize"))
        .set("Content-Type", "application/json")
        .send_string(&body.to_string())
        .ok()?;
    let tokens: Vec<Vec<serde_json::Value>> = json_body(resp).ok()?;
    let differ: Vec<String> = TOKENIZE_SAMPLES
        .iter()
        .zip(&tokens)
        .filter(|(t, server)| server.len() != local(t))
        .map(|(t, server)| format!("{:?}: server {}, local {}", t, server.len(), local(t)))
        .collect();
    (!differ.is_empty()).then(|| {
        format!(
            "{base}/tokenize counts differently from the model's tokenizer ({}): the server runs another model or tokenizer, so tails and windows counted here may not be the server's",
            differ.join("; ")
        )
    })
}

/// text-embeddings-inference's `/info` (beside the `/v1` base, or at it).
fn server_info(agent: &ureq::Agent, config: &RemoteConfig) -> ServerInfo {
    #[derive(Deserialize)]
    struct Info {
        max_input_length: Option<usize>,
        auto_truncate: Option<bool>,
    }
    let base = config.endpoint.trim_end_matches("/v1");
    for url in [format!("{base}/info"), format!("{}/info", config.endpoint)] {
        if let Ok(resp) = agent.get(&url).timeout(Duration::from_secs(5)).call() {
            if let Ok(i) = json_body::<Info>(resp) {
                return ServerInfo {
                    max_input_length: i.max_input_length,
                    auto_truncate: i.auto_truncate,
                };
            }
        }
    }
    ServerInfo::default()
}

impl Remote {
    /// What the server does with a text over its window: as configured, else as `/info` says.
    pub fn overflow(&self) -> Overflow {
        resolve_overflow(&self.config, &self.info)
    }
}

/// The overflow rule: the configured one, else `/info`'s `auto_truncate`, else truncate.
pub fn resolve_overflow(config: &RemoteConfig, info: &ServerInfo) -> Overflow {
    config.overflow.unwrap_or(match info.auto_truncate {
        Some(false) => Overflow::Reject,
        _ => Overflow::Truncate,
    })
}

/// The window an embedding server enforces, as far as it says: its `max_input_length` (which
/// `auto` takes), and whether it refuses longer inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerWindow {
    pub endpoint: String,
    pub max_input_length: Option<usize>,
    pub rejects: bool,
    /// When the server has a tokenize route (text-embeddings-inference's `POST /tokenize`) and
    /// its counts differ from the local tokenizer's on sample texts: what differs.
    pub tokenizer_mismatch: Option<String>,
}

impl ServerWindow {
    /// Ask the server (its `/info`, and its `/tokenize` on a few sample texts compared with
    /// `local`, the model's tokenizer counting specials; a few seconds at most); nothing is
    /// embedded.
    pub fn probe(config: &RemoteConfig, local: &dyn Fn(&str) -> usize) -> ServerWindow {
        let agent = ureq::AgentBuilder::new()
            .timeout(config.timeout.min(Duration::from_secs(5)))
            .build();
        let info = server_info(&agent, config);
        ServerWindow {
            endpoint: config.endpoint.clone(),
            max_input_length: info.max_input_length,
            rejects: resolve_overflow(config, &info) == Overflow::Reject,
            tokenizer_mismatch: tokenizer_mismatch(&agent, config, local),
        }
    }

    /// The window in force with this server: `auto` takes the server's own length when it
    /// states one; any other choice stands (the server's length is then the user's to match).
    pub fn apply(
        &self,
        spec: crate::window::WindowSpec,
        model: crate::window::Window,
    ) -> crate::window::Window {
        let mut w = match (spec, self.max_input_length) {
            (crate::window::WindowSpec::Auto, Some(n)) => crate::window::Window {
                tokens: n,
                source: format!("{} /info max_input_length", self.endpoint),
                rejects: false,
            },
            _ => model,
        };
        w.rejects = self.rejects;
        if self.rejects {
            w.source.push_str("; the server rejects longer inputs");
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_stays_bounded() {
        for a in 1..20 {
            let d = backoff(a).as_secs_f64();
            let base = (0.5 * 2f64.powi(a as i32 - 1)).min(30.0);
            assert!(d >= base * 0.5 - 1e-9 && d <= base + 1e-9, "{a}: {d}");
        }
    }

    #[test]
    fn answers_are_put_back_in_input_order() {
        let r = Response {
            data: vec![
                Item {
                    embedding: vec![2.0],
                    index: Some(1),
                },
                Item {
                    embedding: vec![1.0],
                    index: Some(0),
                },
            ],
        };
        assert_eq!(order(r, 2).unwrap(), vec![vec![1.0], vec![2.0]]);
        let short = Response { data: vec![] };
        assert!(order(short, 1).is_err());
    }

    #[test]
    fn a_dead_endpoint_is_named_in_the_error() {
        let mut c = RemoteConfig::new("http://127.0.0.1:9/v1", "m");
        c.max_retries = 1;
        c.timeout = Duration::from_secs(2);
        let e = Remote::connect(c).err().unwrap().to_string();
        assert!(e.contains("http://127.0.0.1:9/v1/embeddings"), "{e}");
        assert!(e.contains("gave up after 1 retries"), "{e}");
    }
}
