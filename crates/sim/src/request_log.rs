//! Per-endpoint request counts and a bounded log of the requests the simulator answered.

use std::collections::{BTreeMap, VecDeque};

use crate::snapshot::RequestRecord;

/// Counts and recent requests.
#[derive(Debug)]
pub(crate) struct RequestLog {
    capacity: usize,
    next_seq: u64,
    counts: BTreeMap<String, u64>,
    records: VecDeque<RequestRecord>,
    /// When the log began: records carry their real offset from it.
    started: std::time::Instant,
}

impl RequestLog {
    /// A log keeping at most `capacity` records (counts are unbounded).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            next_seq: 1,
            counts: BTreeMap::new(),
            records: VecDeque::new(),
            started: std::time::Instant::now(),
        }
    }

    /// Records one answered request.
    pub(crate) fn record(
        &mut self,
        method: &str,
        path: &str,
        query: Option<&str>,
        endpoint: &str,
        status: u16,
        peer: Option<std::net::SocketAddr>,
    ) {
        *self.counts.entry(endpoint.to_owned()).or_default() += 1;
        if self.capacity == 0 {
            return;
        }
        if self.records.len() == self.capacity {
            self.records.pop_front();
        }
        self.records.push_back(RequestRecord {
            seq: self.next_seq,
            method: method.to_owned(),
            path: path.to_owned(),
            query: query.map(str::to_owned),
            endpoint: endpoint.to_owned(),
            status,
            peer: peer.map(|p| p.to_string()),
            at_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
        self.next_seq += 1;
    }

    /// Requests per endpoint name.
    pub(crate) fn counts(&self) -> BTreeMap<String, u64> {
        self.counts.clone()
    }

    /// The recorded requests, oldest first.
    pub(crate) fn records(&self) -> Vec<RequestRecord> {
        self.records.iter().cloned().collect()
    }

    /// Forgets counts and records.
    pub(crate) fn clear(&mut self) {
        self.counts.clear();
        self.records.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_counts_beyond_the_bounded_log() {
        let mut log = RequestLog::new(2);
        for _ in 0..3 {
            log.record("GET", "/x", None, "get_message", 202, None);
        }
        assert_eq!(log.counts().get("get_message"), Some(&3));
        let records = log.records();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].seq, 2);
        log.clear();
        assert!(log.counts().is_empty());
    }
}
