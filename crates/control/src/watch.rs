//! The supervisor's copy of every scale set's row, kept current by reading only the rows
//! written since a recent revision ([`ScaleSetStore::scale_sets_changed_since`]).
//!
//! Every worker's supervisor needs every row at every tick: the lease planner shares out all
//! enabled scale sets, the exports and the attention count cover them all. Reading them all
//! every tick cost each worker a copy of every row (36 columns) per tick: with eight workers
//! on 100,000 scale sets that held gigabytes and most of PostgreSQL's CPU
//! (`docs/benchmarks.md`, issue 53). An idle fleet writes almost nothing, so almost nothing is
//! read.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use scaleset_store::{Revision, ScaleSet, ScaleSetChanges, ScaleSetId, ScaleSetStore};
use tokio::time::Instant;

/// How old a revision must be before the watch reads from it. On PostgreSQL a write takes its
/// revision before it commits, so a write can become visible after a higher revision was
/// read; reading from a revision this old re-reads what was written since, which covers
/// every write whose transaction took less than this. The store's transactions take
/// milliseconds; what this costs is re-reading each row written in the last half minute.
pub(crate) const REREAD: Duration = Duration::from_secs(30);

/// Every scale set's row as of the last [`Watch::refresh`].
#[derive(Debug, Default)]
pub(crate) struct Watch {
    rows: BTreeMap<ScaleSetId, ScaleSet>,
    /// The revisions read at each refresh of the last [`REREAD`] and the one before, oldest
    /// first.
    reads: VecDeque<(Instant, Revision)>,
    /// The database and its count of deletions at the last refresh.
    last: Option<(String, u64)>,
}

/// How a refresh read the store, for tests and the benchmark's reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refreshed {
    /// Every row was read (no revision old enough yet).
    pub(crate) full: bool,
    /// How many rows were read.
    pub(crate) rows_read: usize,
    /// The ids were listed, to drop deleted rows.
    pub(crate) listed_ids: bool,
}

impl Watch {
    /// Every scale set as last read, in id order.
    pub(crate) fn scale_sets(&self) -> Vec<&ScaleSet> {
        self.rows.values().collect()
    }

    /// The revision to read from at `now`: the newest read at least [`REREAD`] before it, or
    /// `None` (read every row) while no read is that old.
    fn since(&self, now: Instant) -> Option<Revision> {
        self.reads
            .iter()
            .rev()
            .find(|(at, _)| now.saturating_duration_since(*at) >= REREAD)
            .map(|(_, revision)| *revision)
    }

    /// Whether `changes` come from another database than the last refresh read: another
    /// incarnation, or one whose revisions or deletions went back (restored from a backup; a
    /// delete of the newest-written row also lowers the highest revision, and costs one whole
    /// read).
    fn another_database(&self, changes: &ScaleSetChanges) -> bool {
        let went_back = self
            .reads
            .back()
            .is_some_and(|(_, revision)| changes.revision < *revision);
        match &self.last {
            Some((incarnation, deletions)) => {
                *incarnation != changes.incarnation || changes.deletions < *deletions || went_back
            }
            None => went_back,
        }
    }

    /// Reads what changed since the last refreshes and updates the copy. On an error the copy
    /// stays as it was (the next refresh reads from the same revision).
    pub(crate) async fn refresh(
        &mut self,
        store: &dyn ScaleSetStore,
        now: Instant,
    ) -> Result<Refreshed, scaleset_store::Error> {
        let mut since = self.since(now);
        let mut changes = store.scale_sets_changed_since(since).await?;
        if since.is_some() && self.another_database(&changes) {
            // Wiped, restored from a backup or another one: its revisions say nothing of the
            // copy, so it is read whole again.
            self.reads.clear();
            since = None;
            changes = store.scale_sets_changed_since(None).await?;
        }
        let rows_read = changes.changed.len();
        if since.is_none() {
            self.rows = changes
                .changed
                .into_iter()
                .map(|scale_set| (scale_set.id, scale_set))
                .collect();
        } else {
            for scale_set in changes.changed {
                self.rows.insert(scale_set.id, scale_set);
            }
        }
        // The copy holds every row that exists (each written after `since` was read, the
        // rest were read before) and perhaps some deleted ones: a count of deletions that
        // moved means a delete, and the ids tell which. A full read is the ids.
        let listed_ids = since.is_some()
            && self.last.as_ref().map(|(_, deletions)| *deletions) != Some(changes.deletions);
        if listed_ids {
            let ids: BTreeSet<ScaleSetId> = store.list_scale_set_ids().await?.into_iter().collect();
            self.rows.retain(|id, _| ids.contains(id));
            for id in ids {
                if self.rows.contains_key(&id) {
                    continue;
                }
                // Created after the read above, or a write whose revision the read missed.
                match store.get_scale_set(id).await {
                    Ok(scale_set) => {
                        self.rows.insert(id, scale_set);
                    }
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(e),
                }
            }
        }
        self.last = Some((changes.incarnation, changes.deletions));
        // Reads older than the newest one at least REREAD old are never read from again.
        while self.reads.len() > 1 && now.saturating_duration_since(self.reads[1].0) >= REREAD {
            self.reads.pop_front();
        }
        self.reads.push_back((now, changes.revision));
        Ok(Refreshed {
            full: since.is_none(),
            rows_read,
            listed_ids,
        })
    }
}

#[cfg(test)]
mod tests {
    use scaleset_store::test_util::{
        TestDb, change_spec, create_organization, simulator_credentials, spec,
    };
    use scaleset_store::{DieselStore, NewScaleSet, ScaleSetStore as _};

    use super::*;

    scaleset_store::backend_tests!(
        the_copy_follows_writes_creates_and_deletes_reading_only_what_changed
    );

    async fn create(store: &DieselStore, entity: scaleset_store::EntityId, name: &str) -> ScaleSet {
        store
            .create_scale_set(NewScaleSet {
                entity_id: entity,
                spec: spec(name),
            })
            .await
            .expect("create scale set")
    }

    fn names(watch: &Watch) -> Vec<String> {
        let mut names: Vec<String> = watch
            .scale_sets()
            .iter()
            .map(|s| s.spec.name().as_str().to_owned())
            .collect();
        names.sort();
        names
    }

    async fn the_copy_follows_writes_creates_and_deletes_reading_only_what_changed(db: TestDb) {
        let store = db.open().await;
        let entity = create_organization(&store, "org", simulator_credentials("http://sim"))
            .await
            .id;
        let kept = create(&store, entity, "kept").await;
        let edited = create(&store, entity, "edited").await;
        let mut watch = Watch::default();
        let start = Instant::now();
        let tick = Duration::from_secs(10);

        // Until a read is REREAD old, every refresh reads every row.
        let first = watch.refresh(&store, start).await.unwrap();
        assert!(first.full);
        assert_eq!(first.rows_read, 2);
        assert!(watch.refresh(&store, start + tick).await.unwrap().full);
        assert_eq!(names(&watch), ["edited", "kept"]);

        // Then only what was written since the read REREAD before.
        let quiet = watch.refresh(&store, start + REREAD).await.unwrap();
        assert_eq!(
            quiet,
            Refreshed {
                full: false,
                rows_read: 0,
                listed_ids: false
            }
        );

        let mut changed = edited.clone();
        change_spec(&mut changed.spec, |raw| raw.max_runners = Some(7));
        store.update_scale_set(&changed).await.unwrap();
        let added = create(&store, entity, "added").await;
        let written = watch.refresh(&store, start + REREAD + tick).await.unwrap();
        assert!(!written.full);
        assert_eq!(written.rows_read, 2, "the edited and the added row");
        assert_eq!(names(&watch), ["added", "edited", "kept"]);
        let copy = watch.rows.get(&edited.id).unwrap();
        assert_eq!(copy.spec.max_runners(), 7);
        // Read again while the write is within REREAD of the read it is read from.
        let again = watch
            .refresh(&store, start + REREAD + tick * 2)
            .await
            .unwrap();
        assert_eq!(again.rows_read, 2);

        let gone = store.get_scale_set(added.id).await.unwrap();
        store
            .delete_scale_set(gone.id, gone.generation)
            .await
            .unwrap();
        let deleted = watch.refresh(&store, start + REREAD * 3).await.unwrap();
        assert!(deleted.listed_ids, "the deletions counted show the delete");
        assert_eq!(names(&watch), ["edited", "kept"]);
        assert_eq!(watch.rows.get(&kept.id).unwrap().id, kept.id);
        let settled = watch
            .refresh(&store, start + REREAD * 3 + tick)
            .await
            .unwrap();
        assert!(!settled.listed_ids);

        // The database replaced under the worker (wiped, or another): read whole again, even
        // though its revisions are lower and nothing in it was deleted.
        let replaced = db.another("watch_replaced").await;
        let other_store = replaced.open().await;
        let other_entity =
            create_organization(&other_store, "org", simulator_credentials("http://sim"))
                .await
                .id;
        create(&other_store, other_entity, "declared-again").await;
        let after_wipe = watch
            .refresh(&other_store, start + REREAD * 3 + tick * 2)
            .await
            .unwrap();
        assert!(after_wipe.full, "another database is read whole");
        assert_eq!(names(&watch), ["declared-again"]);
    }
}
