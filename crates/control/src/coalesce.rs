//! Many tasks' small requests joined into one batch: the lease renewals of thousands of scale
//! sets become a few store commits a second instead of one each (`docs/benchmarks.md`,
//! listener density: 250 renewals a second at 10,000 scale sets).

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Requests waiting for the batch that will carry them.
type Pending<T, R> = Arc<Mutex<Vec<(T, oneshot::Sender<R>)>>>;

/// Joins requests `T` into batches answered `R` per request.
pub(crate) struct Coalesce<T, R> {
    pending: Pending<T, R>,
}

impl<T, R> Default for Coalesce<T, R> {
    fn default() -> Self {
        Self {
            pending: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

impl<T: Send + 'static, R: Send + 'static> Coalesce<T, R> {
    /// Adds `item` to the open batch, or opens one that `flush` runs `window` from now (the
    /// `flush` of a later joiner is dropped unused). `flush` gets the items in joining order
    /// and answers them in the same order, or `None` when the batch failed as a whole.
    ///
    /// `None` here: the batch failed, or answered fewer items, or its task ended (the runtime
    /// shutting down); the caller then makes its request alone. The batch runs in a task of
    /// its own, so a joiner that is cancelled does not strand the others.
    pub(crate) async fn join<F, Fut>(&self, item: T, window: Duration, flush: F) -> Option<R>
    where
        F: FnOnce(Vec<T>) -> Fut + Send + 'static,
        Fut: Future<Output = Option<Vec<R>>> + Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let opens = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            pending.push((item, answer));
            pending.len() == 1
        };
        if opens {
            let pending = self.pending.clone();
            tokio::spawn(async move {
                // The batch is no one joiner's to stop (it serves them all); a runtime
                // shutdown drops it, and each joiner then asks alone.
                let _ = crate::wait::wait_for(&CancellationToken::new(), window).await;
                let batch =
                    std::mem::take(&mut *pending.lock().unwrap_or_else(PoisonError::into_inner));
                let (items, answers): (Vec<T>, Vec<_>) = batch.into_iter().unzip();
                if let Some(results) = flush(items).await {
                    for (answer, result) in answers.into_iter().zip(results) {
                        // A joiner that went away no longer needs its answer.
                        let _ = answer.send(result);
                    }
                }
            });
        }
        answered.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn counting(
        flushes: &Arc<AtomicUsize>,
        sizes: &Arc<Mutex<Vec<usize>>>,
        fail: bool,
    ) -> impl FnOnce(Vec<u32>) -> std::future::Ready<Option<Vec<u32>>> + Send + 'static {
        let (flushes, sizes) = (flushes.clone(), sizes.clone());
        move |items| {
            flushes.fetch_add(1, Ordering::SeqCst);
            sizes.lock().unwrap().push(items.len());
            std::future::ready((!fail).then(|| items.iter().map(|i| i * 10).collect()))
        }
    }

    type Setup = (
        Arc<Coalesce<u32, u32>>,
        Arc<AtomicUsize>,
        Arc<Mutex<Vec<usize>>>,
    );

    fn setup() -> Setup {
        (Arc::default(), Arc::default(), Arc::default())
    }

    /// `n` requests joined at once, each from a task of its own.
    fn join_together(
        coalesce: &Arc<Coalesce<u32, u32>>,
        flushes: &Arc<AtomicUsize>,
        sizes: &Arc<Mutex<Vec<usize>>>,
        n: u32,
        fail: bool,
    ) -> Vec<tokio::task::JoinHandle<Option<u32>>> {
        (0..n)
            .map(|i| {
                let (coalesce, flush) = (coalesce.clone(), counting(flushes, sizes, fail));
                tokio::spawn(
                    async move { coalesce.join(i, Duration::from_millis(100), flush).await },
                )
            })
            .collect()
    }

    /// Fifty requests made together cost one flush, and each gets its own answer; a request
    /// after that batch opens the next one.
    #[tokio::test(start_paused = true)]
    async fn requests_made_together_share_one_flush_and_get_their_own_answers() {
        let (coalesce, flushes, sizes) = setup();
        let joins = join_together(&coalesce, &flushes, &sizes, 50, false);
        for (i, join) in joins.into_iter().enumerate() {
            let i = u32::try_from(i).unwrap();
            assert_eq!(join.await.unwrap(), Some(i * 10), "request {i}");
        }
        assert_eq!(flushes.load(Ordering::SeqCst), 1, "one flush for the batch");
        assert_eq!(*sizes.lock().unwrap(), [50]);

        let later = coalesce
            .join(
                7,
                Duration::from_millis(100),
                counting(&flushes, &sizes, false),
            )
            .await;
        assert_eq!(later, Some(70));
        assert_eq!(
            *sizes.lock().unwrap(),
            [50, 1],
            "a later request opens a new batch"
        );
    }

    /// A batch that fails as a whole answers every joiner `None` (each then asks alone).
    #[tokio::test(start_paused = true)]
    async fn a_failed_batch_answers_none_to_every_joiner() {
        let (coalesce, flushes, sizes) = setup();
        let joins = join_together(&coalesce, &flushes, &sizes, 5, true);
        for join in joins {
            assert_eq!(join.await.unwrap(), None);
        }
        assert_eq!(*sizes.lock().unwrap(), [5]);
    }
}
