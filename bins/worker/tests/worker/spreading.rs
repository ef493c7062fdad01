//! Several workers on one PostgreSQL database spread the scale sets among themselves: a worker
//! joining takes a share from the one that held everything (which releases it cleanly), three
//! workers each serve some, every job is served once, and after a kill -9 the others take the
//! dead worker's scale sets once its leases expire.

use nix::sys::signal::Signal;

use crate::helpers::{self, RunningSim, Site, Worker, eventually, worker_env_with};
use crate::{assert_served_once, leases_held, serve_jobs};

/// Each worker's `leasesHeld`, in order.
async fn shares(workers: &[&Worker]) -> Vec<u64> {
    let mut held = Vec::new();
    for worker in workers {
        held.push(leases_held(worker).await);
    }
    held
}

fn env_named(name: &str) -> Vec<(&'static str, String)> {
    worker_env_with(&[("SCALESET_WORKER__NAME", name)])
}

/// Waits (saying `what`) until every scale set of `ids` has a session, then serves two jobs on
/// each and checks that each job was served once.
async fn serve_two_jobs_each(sim: &RunningSim, site: &Site, ids: &[i64], what: &str) {
    sim.all_listening(what, ids).await;
    for id in ids {
        serve_jobs(sim, site, *id, 2).await;
    }
    for id in ids {
        assert_served_once(sim, *id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_workers_spread_the_scale_sets_and_take_over_after_kill_9() {
    let names = ["s1", "s2", "s3", "s4", "s5", "s6"];
    let Some((_db, sim, site)) =
        helpers::postgres_site("the spreading PostgreSQL test", &names).await
    else {
        return;
    };

    // Alone, worker a serves every scale set.
    let a = Worker::spawn(&site.config(), &env_named("worker-a"));
    let ids = eventually("all six scale sets listen", || async {
        let ids: Vec<i64> = names.iter().filter_map(|n| sim.scale_set_id(n)).collect();
        (ids.len() == names.len() && ids.iter().all(|id| sim.has_session(*id))).then_some(ids)
    })
    .await;
    eventually("worker a holds every lease", || async {
        (shares(&[&a]).await == [6]).then_some(())
    })
    .await;

    // Worker b joins: a releases its surplus and b takes it, three each.
    let b = Worker::spawn(&site.config(), &env_named("worker-b"));
    eventually("a and b hold three each", || async {
        (shares(&[&a, &b]).await == [3, 3]).then_some(())
    })
    .await;
    // Worker c joins: two each, every scale set still listened to.
    let c = Worker::spawn(&site.config(), &env_named("worker-c"));
    eventually("a, b and c hold two each", || async {
        (shares(&[&a, &b, &c]).await == [2, 2, 2]).then_some(())
    })
    .await;
    serve_two_jobs_each(&sim, &site, &ids, "every scale set has a session").await;

    // kill -9 c: once its heartbeat and leases expire, a and b serve its scale sets too.
    let _ = c.signal_and_wait(Signal::SIGKILL).await;
    eventually(
        "a and b hold three each after c's leases expired",
        || async { (shares(&[&a, &b]).await == [3, 3]).then_some(()) },
    )
    .await;
    serve_two_jobs_each(&sim, &site, &ids, "every scale set has a session again").await;
    for id in &ids {
        assert_eq!(sim.sim.state().jobs_of(*id).count(), 4, "every job ran");
    }
    assert_eq!(
        sim.sim.request_count("create_scale_set"),
        6,
        "no duplicate scale set while leases changed hands"
    );
    assert_eq!(sim.sim.state().scale_sets.len(), 6);

    assert_eq!(a.signal_and_wait(Signal::SIGTERM).await, Some(0));
    eventually("b takes a's scale sets after a's clean stop", || async {
        (shares(&[&b]).await == [6]).then_some(())
    })
    .await;
    assert_eq!(b.signal_and_wait(Signal::SIGTERM).await, Some(0));
    for id in ids {
        assert!(!sim.has_session(id), "every session deleted on SIGTERM");
    }
}
