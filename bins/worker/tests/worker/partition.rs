//! The fence: a worker cut off from its database by the network (its PostgreSQL link drops
//! every packet while both processes run) reports itself not ready with a typed reason, and
//! another worker takes its scale set over and serves its jobs; after the heal it is ready
//! again. Learned from `/readyz`'s body, the store and the simulator, never from a log.

use std::net::SocketAddr;

use nix::sys::signal::Signal;
use scaleset_store::{Clock as _, LeaseStore as _, SystemClock};

use crate::helpers::{Worker, eventually, get, postgres_site, worker_env_with};
use crate::link::{Fault, Link};

/// The address of the PostgreSQL server in `url`.
fn postgres_addr(url: &str) -> SocketAddr {
    let parsed = url::Url::parse(url).expect("the database URL");
    format!(
        "{}:{}",
        parsed.host_str().unwrap_or("127.0.0.1"),
        parsed.port().unwrap_or(5432)
    )
    .parse()
    .expect("the test's PostgreSQL is at an IP address")
}

/// `/readyz` of the worker at `addr`: its status and body as JSON.
async fn readiness(addr: SocketAddr) -> (u16, serde_json::Value) {
    let (status, body) = get(addr, "/readyz").await;
    let body = serde_json::from_str(&body).unwrap_or(serde_json::Value::Null);
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_cut_off_from_its_database_says_why_it_is_not_ready_and_another_serves_its_set() {
    let Some((db, sim, site)) = postgres_site(
        "a worker cut off from its database fences itself",
        &["linux"],
    )
    .await
    else {
        return;
    };
    let link = Link::start(postgres_addr(&db.url), None)
        .await
        .expect("a proxy for the database link");
    let mut proxied = url::Url::parse(&db.url).expect("the database URL");
    proxied.set_port(Some(link.addr.port())).expect("a port");
    let config = site.dir.path().join("cut-off.toml");
    let text = std::fs::read_to_string(site.config()).expect("the configuration");
    std::fs::write(
        &config,
        text.replace(
            &format!("url = \"{}\"", db.url),
            &format!("url = \"{proxied}\""),
        ),
    )
    .expect("the cut-off worker's configuration");

    let a = Worker::spawn(
        &config,
        &worker_env_with(&[("SCALESET_WORKER__NAME", "worker-a")]),
    );
    let id = sim.listening("worker a serves linux", "linux").await;
    let ready_a = a.listen().await;
    eventually("worker a holds the lease of linux", || async {
        let (status, body) = readiness(ready_a).await;
        (status == 200 && body["leasesHeld"] == 1).then_some(())
    })
    .await;
    let b = Worker::spawn(
        &site.config(),
        &worker_env_with(&[("SCALESET_WORKER__NAME", "worker-b")]),
    );

    link.set(Fault::Drop);
    let reason = eventually("worker a reports itself not ready, saying why", || async {
        let (status, body) = readiness(ready_a).await;
        (status == 503).then(|| body["reason"].clone())
    })
    .await;
    assert!(
        ["store_timed_out", "leases_in_doubt", "store_failed"]
            .contains(&reason["kind"].as_str().unwrap_or_default()),
        "a typed reason: {reason}"
    );

    let set = site.scale_set("linux").await.expect("linux is stored");
    let store = site.store().await;
    eventually("worker b takes the lease of linux over", || async {
        let lease = store.get_lease(set.id).await.ok()??;
        (lease.holder == "worker-b" && lease.expires_at > SystemClock.now()).then_some(())
    })
    .await;
    sim.listening("linux listens again (worker b's session)", "linux")
        .await;
    sim.enqueue(id, 2);
    sim.all_running("worker b serves the jobs of linux", id, 2)
        .await;

    link.set(Fault::Pass);
    eventually("worker a is ready again after the heal", || async {
        (readiness(ready_a).await.0 == 200).then_some(())
    })
    .await;
    assert_eq!(a.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert_eq!(b.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert_eq!(
        site.instances().len(),
        2,
        "one runner per job, none twice: {:?}",
        site.instances()
    );
}
