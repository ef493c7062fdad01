//! Unit tests of the call limits: the rate's grammar, the concurrency and the rate honoured
//! (counted and ordered, on tokio's paused clock where time matters), and a burst all in
//! flight at once under the defaults.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

use super::*;
use crate::bootstrap::{BootstrapInstance, OsArch, OsType, UserDataOptions};
use crate::instance::InstanceStatus;
use crate::pool::PoolKey;

/// A provider whose creates record when and in what order they started, count how many run at
/// once, and wait for the gate to open (when it has one).
#[derive(Default)]
struct Counting {
    running: AtomicUsize,
    most: AtomicUsize,
    started: Mutex<Vec<(String, Instant)>>,
    gate: Option<Arc<Notify>>,
    lists: AtomicUsize,
}

impl Counting {
    fn gated(gate: &Arc<Notify>) -> Self {
        Self {
            gate: Some(Arc::clone(gate)),
            ..Self::default()
        }
    }

    fn started(&self) -> Vec<(String, Instant)> {
        self.started.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn instance(name: &str) -> ProviderInstance {
    ProviderInstance {
        provider_id: format!("id-{name}"),
        name: name.to_owned(),
        os_type: None,
        os_name: None,
        os_version: None,
        os_arch: None,
        addresses: Vec::new(),
        status: InstanceStatus::Running,
        provider_fault: None,
        pool_id: None,
    }
}

#[async_trait]
impl Provider for Counting {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        if let Ok(mut started) = self.started.lock() {
            started.push((request.bootstrap.name.clone(), Instant::now()));
        }
        if let Some(gate) = &self.gate {
            gate.notified().await;
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(instance(&request.bootstrap.name))
    }
    async fn delete(&self, _: &Pool, _: &InstanceId) -> Result<(), Error> {
        Ok(())
    }
    async fn get(&self, _: &Pool, instance_id: &InstanceId) -> Result<ProviderInstance, Error> {
        Ok(instance(instance_id.as_str()))
    }
    async fn list(&self, _: &Pool) -> Result<Vec<ProviderInstance>, Error> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        Ok(Vec::new())
    }
    async fn remove_all(&self) -> Result<(), Error> {
        Ok(())
    }
    async fn start(&self, _: &Pool, _: &InstanceId) -> Result<(), Error> {
        Ok(())
    }
    async fn stop(&self, _: &Pool, _: &InstanceId) -> Result<(), Error> {
        Ok(())
    }
    async fn version(&self) -> Result<String, Error> {
        Ok("counting".to_owned())
    }
}

fn pool() -> Pool {
    Pool::new(PoolKey::for_scale_set(
        uuid::Uuid::from_u128(1),
        scaleset_domain::GithubScaleSetId(7),
    ))
}

fn request(name: &str) -> CreateRequest {
    CreateRequest {
        bootstrap: BootstrapInstance {
            name: name.to_owned(),
            tools: vec![],
            repo_url: "https://github.com/acme".into(),
            callback_url: String::new(),
            metadata_url: String::new(),
            instance_token: crate::SecretString::from(""),
            ssh_keys: vec![],
            extra_specs: None,
            github_runner_group: "default".into(),
            ca_cert_bundle: None,
            arch: OsArch::Amd64,
            os_type: OsType::Linux,
            flavor: "small".into(),
            image: "ubuntu".into(),
            labels: vec![],
            pool_id: pool().key,
            user_data_options: UserDataOptions::default(),
            jit_config_enabled: true,
            proxy_config: None,
        },
        jit_config: None,
        bootstrap_timeout: None,
    }
}

fn limits(concurrency: usize, create_rate: Option<&str>) -> CallLimits {
    CallLimits {
        concurrency: NonZeroUsize::new(concurrency).unwrap(),
        create_rate: create_rate.map(|r| CreateRate::parse(r).unwrap()),
    }
}

/// Spawns `n` creates `r-0`… in order, each in its own task.
fn spawn_creates(
    provider: &Arc<Limited<Counting>>,
    n: usize,
) -> tokio::task::JoinSet<Result<ProviderInstance, Error>> {
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..n {
        let provider = Arc::clone(provider);
        calls.spawn(async move { provider.create(&request(&format!("r-{i}"))).await });
    }
    calls
}

/// Lets every spawned task run until it waits (single-threaded runtime).
async fn settle() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}

#[test]
fn rates_parse_and_print_in_their_own_words() {
    for (text, interval, shown) in [
        ("5/s", Duration::from_millis(200), "5/s"),
        ("120/m", Duration::from_millis(500), "120/m"),
        ("1/h", Duration::from_secs(3600), "1/h"),
        ("3/s", Duration::from_nanos(333_333_333), "3/s"),
    ] {
        let rate = CreateRate::parse(text).unwrap();
        assert_eq!(rate.interval(), interval, "{text}");
        assert_eq!(rate.to_string(), shown);
    }
    for (text, expected) in [
        ("0/s", RateError::Count { count: "0".into() }),
        ("5", RateError::NotARate { text: "5".into() }),
        (
            "5/d",
            RateError::Unit {
                unit: "d".into(),
                text: "5/d".into(),
            },
        ),
        ("/s", RateError::Count { count: "".into() }),
        ("x/s", RateError::Count { count: "x".into() }),
        ("-1/m", RateError::Count { count: "-1".into() }),
        (
            "4294967296/s",
            RateError::Count {
                count: "4294967296".into(),
            },
        ),
    ] {
        let err = CreateRate::parse(text).unwrap_err();
        assert_eq!(err, expected, "{text}");
        assert!(
            err.to_string().contains("\"N/s\""),
            "says what to write: {err}"
        );
    }
    assert_eq!(CreateRate::new(NonZeroU32::MIN, Duration::ZERO), None);
    assert_eq!(
        CreateRate::new(NonZeroU32::new(4).unwrap(), Duration::from_secs(2))
            .map(CreateRate::interval),
        Some(Duration::from_millis(500))
    );
}

/// At most `concurrency` creates run at once; the others wait and start in the order asked.
#[tokio::test(flavor = "current_thread")]
async fn the_concurrency_is_honoured_and_waiting_calls_keep_their_order() {
    let gate = Arc::new(Notify::new());
    let provider = Arc::new(Limited::new(Counting::gated(&gate), limits(3, None)));
    let mut calls = spawn_creates(&provider, 8);
    settle().await;
    assert_eq!(provider.inner.running.load(Ordering::SeqCst), 3);
    // A list waits behind them too: the limit is on every call.
    let list = {
        let provider = Arc::clone(&provider);
        tokio::spawn(async move { provider.list(&pool()).await })
    };
    settle().await;
    assert_eq!(provider.inner.lists.load(Ordering::SeqCst), 0);
    let mut finished = 0;
    while finished < 8 {
        gate.notify_one();
        calls.join_next().await.unwrap().unwrap().unwrap();
        finished += 1;
        settle().await;
        assert!(provider.inner.running.load(Ordering::SeqCst) <= 3);
    }
    list.await.unwrap().unwrap();
    assert_eq!(provider.inner.most.load(Ordering::SeqCst), 3);
    let order: Vec<String> = provider
        .inner
        .started()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let asked: Vec<String> = (0..8).map(|i| format!("r-{i}")).collect();
    assert_eq!(order, asked);
}

/// Under a rate, creates start one per interval of the (paused) clock, in the order asked;
/// other calls are not held back by the rate.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_create_rate_is_honoured_in_order() {
    let provider = Arc::new(Limited::new(Counting::default(), limits(100, Some("4/s"))));
    let t0 = Instant::now();
    let mut calls = spawn_creates(&provider, 6);
    settle().await;
    // The first starts at once, the rest wait for their turn.
    assert_eq!(provider.inner.started().len(), 1);
    provider.list(&pool()).await.unwrap();
    assert_eq!(
        Instant::now(),
        t0,
        "a list does not wait for the create rate"
    );
    while let Some(done) = calls.join_next().await {
        done.unwrap().unwrap();
    }
    let started = provider.inner.started();
    let order: Vec<&str> = started.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(order, ["r-0", "r-1", "r-2", "r-3", "r-4", "r-5"]);
    let offsets: Vec<Duration> = started.iter().map(|(_, at)| *at - t0).collect();
    let expected: Vec<Duration> = (0..6).map(|i| Duration::from_millis(250) * i).collect();
    assert_eq!(offsets, expected);
}

/// A create that waits for a concurrency slot takes its rate turn only once admitted, so a
/// queue that built up behind slow creates still starts no faster than the rate.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_queue_behind_the_concurrency_still_starts_at_the_rate() {
    let gate = Arc::new(Notify::new());
    let provider = Arc::new(Limited::new(Counting::gated(&gate), limits(1, Some("1/s"))));
    let t0 = Instant::now();
    let mut calls = spawn_creates(&provider, 3);
    settle().await;
    // The first holds the only slot for 10 s (of the paused clock).
    tokio::time::advance(Duration::from_secs(10)).await;
    gate.notify_one();
    calls.join_next().await.unwrap().unwrap().unwrap();
    settle().await;
    gate.notify_one();
    calls.join_next().await.unwrap().unwrap().unwrap();
    settle().await;
    gate.notify_one();
    calls.join_next().await.unwrap().unwrap().unwrap();
    let offsets: Vec<Duration> = provider
        .inner
        .started()
        .iter()
        .map(|(_, at)| *at - t0)
        .collect();
    assert_eq!(offsets[0], Duration::ZERO);
    assert_eq!(offsets[1], Duration::from_secs(10));
    assert!(
        offsets[2] >= offsets[1] + Duration::from_secs(1),
        "{offsets:?}"
    );
    assert_eq!(provider.inner.most.load(Ordering::SeqCst), 1);
}

/// Issue 35: under the default limits a burst of 1,000 creates is in flight at once.
#[tokio::test(flavor = "current_thread")]
async fn a_burst_of_a_thousand_creates_is_in_flight_at_once_by_default() {
    let gate = Arc::new(Notify::new());
    let provider = Arc::new(Limited::new(Counting::gated(&gate), CallLimits::default()));
    let mut calls = spawn_creates(&provider, 1000);
    settle().await;
    assert_eq!(provider.inner.running.load(Ordering::SeqCst), 1000);
    gate.notify_waiters();
    let mut done = 0;
    while let Some(result) = calls.join_next().await {
        result.unwrap().unwrap();
        done += 1;
    }
    assert_eq!(done, 1000);
    assert_eq!(provider.inner.most.load(Ordering::SeqCst), 1000);
}
