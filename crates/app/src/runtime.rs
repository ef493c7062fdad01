//! The async runtime of the binaries: tokio's multi-threaded scheduler with its blocking pool
//! bounded by what can use it. Every store operation runs in `spawn_blocking` on one of the
//! store's pooled connections, so more blocking threads than connections only wait for one;
//! tokio's default of 512 let a worker starting 10,000 scale sets grow hundreds of threads,
//! each with its stack and, under glibc, its own malloc arena that kept the start-up churn
//! in RSS (docs/benchmarks.md, "Issue 35: memory"). A task beyond the bound queues in tokio
//! until a thread is free, as it would have queued for a connection.

/// Blocking threads beyond the store's connections: name lookups, file reads, the
/// occasional blocking call of a library, and a store call waiting for a connection that a
/// broken one is being replaced for.
pub const BLOCKING_HEADROOM: usize = 16;

/// The most blocking threads for a store of `pool_size` connections.
pub fn blocking_threads(pool_size: u32) -> usize {
    usize::try_from(pool_size)
        .unwrap_or(usize::MAX)
        .saturating_add(BLOCKING_HEADROOM)
}

/// The runtime for a process whose store pools `pool_size` connections
/// (`config.store.configured_pool_size()`), all drivers enabled.
///
/// # Errors
///
/// The operating system refused a thread or the I/O driver.
pub fn runtime(pool_size: u32) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(blocking_threads(pool_size))
        .build()
}

/// Runs `work` for `program` on [`runtime`]`(pool_size)` and says how it ended: what it
/// returned as its [`Exit`](crate::Exit) (`()` is [`Exit::Done`](crate::Exit::Done), a
/// [`Stopped`](crate::Stopped) says whether the stop was clean), or an error, printed with its
/// causes (and logged), as [`Exit::Failed`](crate::Exit::Failed).
pub fn block_on<T, E>(
    program: &str,
    pool_size: u32,
    work: impl std::future::Future<Output = Result<T, E>>,
) -> crate::Exit
where
    T: Into<crate::Exit>,
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    let runtime = match runtime(pool_size) {
        Ok(runtime) => runtime,
        Err(e) => {
            crate::errln!("{program}: cannot start the async runtime: {e}");
            return crate::Exit::Failed;
        }
    };
    let result = runtime.block_on(work);
    // Dropping the runtime would wait for every blocking thread, and one stuck in a database
    // call over a partitioned link (no answer, no reset) never returns: the exit does not wait
    // for it (the chaos soak's partitions found a SIGTERM that never exited).
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(done) => done.into(),
        Err(e) => {
            let e: Box<dyn std::error::Error + Send + Sync> = e.into();
            let mut text = e.to_string();
            let mut source = e.source();
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            tracing::error!(error = text, "{program} stopped");
            crate::errln!("{program}: {text}");
            crate::Exit::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// More blocking tasks than the bound all finish, never more than the bound at once.
    #[test]
    fn the_blocking_pool_is_bounded_by_the_store_connections_and_the_headroom() {
        assert_eq!(blocking_threads(8), 8 + BLOCKING_HEADROOM);
        assert_eq!(
            blocking_threads(u32::MAX),
            u32::MAX as usize + BLOCKING_HEADROOM
        );
        let pool_size = 2;
        let bound = blocking_threads(pool_size);
        let runtime = runtime(pool_size).expect("runtime");
        let (running, most, done) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let tasks = bound * 3;
        // The first tasks hold their threads until the bound is full; an unbounded pool starts
        // a thread per task while they wait, so more than the bound would run at once.
        let started = Arc::new(AtomicUsize::new(0));
        runtime.block_on(async {
            let handles: Vec<_> = (0..tasks)
                .map(|_| {
                    let (running, most, done, started) =
                        (running.clone(), most.clone(), done.clone(), started.clone());
                    tokio::task::spawn_blocking(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        started.fetch_add(1, Ordering::SeqCst);
                        while started.load(Ordering::SeqCst) < bound {
                            std::thread::yield_now();
                        }
                        running.fetch_sub(1, Ordering::SeqCst);
                        done.fetch_add(1, Ordering::SeqCst);
                    })
                })
                .collect();
            for handle in handles {
                handle.await.expect("a blocking task");
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), tasks, "every task ran");
        let most = most.load(Ordering::SeqCst);
        assert!(
            most <= bound,
            "{most} blocking threads ran at once, bound {bound}"
        );
        assert!(most > pool_size as usize, "the headroom is usable: {most}");
    }
}
